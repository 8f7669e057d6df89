// h5wasm-plugins ships no types; only the function this package calls is declared.
declare module "h5wasm-plugins" {
  /** Puts the package's own plugins folder first on the HDF5 plugin search path. */
  export function install_local_plugins(h5wasmModule: unknown): void;
}
