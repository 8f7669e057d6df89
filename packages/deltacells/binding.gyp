{
  "targets": [
    {
      "target_name": "deltacells_kernel",
      "sources": ["native/kernel.c"],
      "cflags": ["-O3"],
      "cflags_c": ["-O3", "-std=gnu11"]
    }
  ]
}
