#!/usr/bin/env python3
# Compiles a suite's kernels without a GPU: NVRTC (from the pip wheels) builds the suite's source
# for an architecture to a cubin, so ptxas checks every instruction, with each variant's kernel
# name as a name expression (templates instantiated as gpu-lab does). Defines and per-variant
# options are not applied: one build with the suite's own `options`.
#
# Setup (once):  python3 -m venv /tmp/nvrtc-venv && /tmp/nvrtc-venv/bin/pip install \
#                  'nvidia-cuda-nvrtc-cu12==12.9.*' 'nvidia-cuda-runtime-cu12==12.9.*' \
#                  'nvidia-cuda-cccl-cu12==12.9.*' 'nvidia-cuda-nvcc-cu12==12.9.*'
# Use:           /tmp/nvrtc-venv/bin/python scripts/nvrtc-offline-check.py kernels/tma [sm_90]
# Prints NVRTC's log, each kernel's lowered name and, from the wheel's ptxas, registers, shared
# memory and spills; exits non-zero when the build fails.
import ctypes
import glob
import os
import subprocess
import sys
import tempfile
import tomllib

import nvidia

site = os.path.dirname(nvidia.__file__) if nvidia.__file__ else list(nvidia.__path__)[0]
lib = ctypes.CDLL(glob.glob(os.path.join(site, "cuda_nvrtc/lib/libnvrtc.so.*"))[0])
includes = [os.path.join(site, d, "include") for d in ("cuda_runtime", "cuda_nvcc", "cuda_cccl")]


def check(result):
    if result != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        sys.exit(f"nvrtc: {lib.nvrtcGetErrorString(result).decode()}")


def main():
    suite_dir = sys.argv[1]
    arch = sys.argv[2] if len(sys.argv) > 2 else "sm_90"
    manifest = tomllib.load(open(os.path.join(suite_dir, "suite.toml"), "rb"))
    source = manifest["suite"]["source"]
    kernels = []
    for v in manifest["variants"]:
        names = [v["kernel"]] if "kernel" in v else []
        names += [launch["kernel"] for launch in v.get("launches", [])]
        # `{NAME}` in a kernel name: the variant's or suite's fixed params only (not axes).
        params = {**manifest.get("params", {}), **v.get("params", {})}
        for name in names:
            for key, value in params.items():
                name = name.replace("{" + key + "}", str(value))
            if "{" in name:
                print(f"skipped (needs an axis value): {name}")
            else:
                kernels.append(name)
    kernels = list(dict.fromkeys(kernels))
    prog = ctypes.c_void_p()
    text = open(os.path.join(suite_dir, source), "rb").read()
    check(lib.nvrtcCreateProgram(ctypes.byref(prog), text, source.encode(), 0, None, None))
    for k in kernels:
        check(lib.nvrtcAddNameExpression(prog, k.encode()))
    opts = [f"--gpu-architecture={arch}", "-lineinfo", f"--include-path={suite_dir}"]
    opts += [f"--include-path={d}" for d in includes] + manifest["suite"].get("options", [])
    result = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts]))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    print(log.value.decode(), end="")
    check(result)
    for k in kernels:
        lowered = ctypes.c_char_p()
        check(lib.nvrtcGetLoweredName(prog, k.encode(), ctypes.byref(lowered)))
        print(f"{k} -> {lowered.value.decode()}")
    lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
    ptx = ctypes.create_string_buffer(size.value)
    check(lib.nvrtcGetPTX(prog, ptx))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.ptx")
        open(path, "wb").write(ptx.value)
        ptxas = os.path.join(site, "cuda_nvcc/bin/ptxas")
        out = subprocess.run([ptxas, f"-arch={arch}", "-v", path, "-o", os.path.join(tmp, "k.cubin")],
                             capture_output=True, text=True)
        print(out.stderr.replace("ptxas info    : ", ""), end="")
        if out.returncode != 0:
            sys.exit("ptxas failed")


main()
