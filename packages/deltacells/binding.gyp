{
  "variables": {
    "zstd_lib": "<!(node -p \"require('path').relative('.', require('path').join(require('path').dirname(require.resolve('zstd-napi/package.json')), 'deps', 'zstd', 'lib'))\")"
  },
  "targets": [
    {
      "target_name": "deltacells_kernel",
      "sources": [
        "native/kernel.c",
        "<(zstd_lib)/common/debug.c",
        "<(zstd_lib)/common/entropy_common.c",
        "<(zstd_lib)/common/error_private.c",
        "<(zstd_lib)/common/fse_decompress.c",
        "<(zstd_lib)/common/xxhash.c",
        "<(zstd_lib)/common/zstd_common.c",
        "<(zstd_lib)/decompress/huf_decompress.c",
        "<(zstd_lib)/decompress/huf_decompress_amd64.S",
        "<(zstd_lib)/decompress/zstd_ddict.c",
        "<(zstd_lib)/decompress/zstd_decompress.c",
        "<(zstd_lib)/decompress/zstd_decompress_block.c"
      ],
      "include_dirs": ["<(zstd_lib)"],
      "defines": ["XXH_NAMESPACE=ZSTD_", "ZSTD_NO_TRACE", "ZSTDLIB_VISIBLE=", "ZSTDERRORLIB_VISIBLE="],
      "cflags": ["-O3", "-fvisibility=hidden"],
      "cflags_c": ["-O3", "-std=gnu11"]
    }
  ]
}
