import { defineConfig } from "vite";

// Static files only: index.html at the root, everything else under _viewer/ (the one name
// `deltacells serve` reserves), with relative URLs so the page works from any folder or bucket.
export default defineConfig({
  base: "./",
  resolve: { conditions: ["source", "browser", "module", "import", "default"] },
  build: {
    outDir: "dist",
    assetsDir: "_viewer",
    emptyOutDir: true,
    target: "es2022",
    chunkSizeWarningLimit: 2000,
  },
  worker: { format: "es" },
});
