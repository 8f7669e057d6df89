export { openDataset, zstdCompressor } from "./dataset/node.js";
