//go:build cuda

// Package cudainit keeps a cuda build of agenttrainer alive on machines
// where the CUDA driver does not answer, so that trainer.device=auto can fall
// back to the CPU. It is a package of its own because it needs cgo, and the
// gpu package cannot use cgo next to its Go assembly.
package cudainit

// Why this package defines cuInit.
//
// gorgonia.org/cu's package init() calls cuInit(0) and, when that fails,
// prints a message and calls os.Exit(1) (cu.go in v0.9.6). An init cannot be
// skipped once its package is linked, and every package of a cuda build links
// gorgonia.org/cu, so without help a cuda binary (or test binary) would die
// before main on any machine whose driver does not answer, and
// trainer.device=auto could never fall back to the CPU.
//
// The help: this package defines the symbol cuInit itself. gorgonia's cgo
// wrapper references cuInit as an undefined symbol, and a definition in an
// object of the executable wins over the one in libcuda.so at link time, so
// gorgonia's init calls the function below. It forwards to the driver's
// cuInit (found with dlsym(RTLD_NEXT)), records the driver's answer, and
// reports success to gorgonia, whose init then returns normally. gpu.Open
// reads the recorded answer (Err) and falls back to the CPU (auto) or returns an error
// (cuda, cuda:N). Nothing else in the process calls this cuInit: cuBLAS and
// NVRTC reach the driver through their own handles.
//
// What this cannot fix: the binary links libcuda.so.1, libcublas.so.N and
// libnvrtc.so.N dynamically, so on a machine without those libraries at all
// the dynamic loader refuses to start it ("error while loading shared
// libraries"). The cuda build is for machines with the NVIDIA driver and the
// CUDA libraries; the default build is the one to ship everywhere else.

/*
#cgo CFLAGS: -I/usr/local/cuda/include
#cgo LDFLAGS: -L/usr/local/cuda/lib64 -lcuda -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <cuda.h>

static int agtInitCalled;
static CUresult agtInitResult = CUDA_ERROR_NOT_INITIALIZED;

CUresult CUDAAPI cuInit(unsigned int flags) {
	CUresult (*real)(unsigned int) = (CUresult (*)(unsigned int))dlsym(RTLD_NEXT, "cuInit");
	agtInitCalled = 1;
	agtInitResult = real ? real(flags) : CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;
	return CUDA_SUCCESS;
}

static int agtCuInitCalled(void) { return agtInitCalled; }
static int agtCuInitResult(void) { return (int)agtInitResult; }

static const char* agtErrorName(int r) {
	const char* s = NULL;
	if (cuGetErrorName((CUresult)r, &s) != CUDA_SUCCESS) return NULL;
	return s;
}

static const char* agtErrorString(int r) {
	const char* s = NULL;
	if (cuGetErrorString((CUresult)r, &s) != CUDA_SUCCESS) return NULL;
	return s;
}
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
)

// knownCUresults names the driver's answers that cuInit gives on machines
// where no GPU can be used, in case cuGetErrorName cannot (stub libraries).
var knownCUresults = map[int]string{
	3:   "CUDA_ERROR_NOT_INITIALIZED",
	34:  "CUDA_ERROR_STUB_LIBRARY (the CUDA stub library, not a driver)",
	35:  "CUDA_ERROR_INSUFFICIENT_DRIVER (the driver is older than this CUDA)",
	100: "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)",
	101: "CUDA_ERROR_INVALID_DEVICE",
	303: "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
	304: "CUDA_ERROR_OPERATING_SYSTEM",
	500: "CUDA_ERROR_NOT_FOUND (cuInit not found in libcuda)",
	802: "CUDA_ERROR_SYSTEM_NOT_READY",
	803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
	999: "CUDA_ERROR_UNKNOWN",
}

// ResultText describes a CUresult.
func ResultText(r int) string {
	if s, ok := knownCUresults[r]; ok {
		return s
	}
	if name := C.agtErrorName(C.int(r)); name != nil {
		text := C.GoString(name)
		if s := C.agtErrorString(C.int(r)); s != nil {
			text += " (" + C.GoString(s) + ")"
		}
		return text
	}
	return fmt.Sprintf("CUresult %d", r)
}

// Err is nil when the CUDA driver initialised at program start, or says why
// it did not.
func Err() error {
	if C.agtCuInitCalled() == 0 {
		// gorgonia's init did not come through the wrapper above (it would
		// have exited had cuInit failed), so the driver is up.
		return nil
	}
	r := int(C.agtCuInitResult())
	if r == 0 {
		return nil
	}
	err := fmt.Errorf("cuInit failed: %s", ResultText(r))
	if hint := deviceFilesHint(); hint != "" {
		err = fmt.Errorf("%w; %s", err, hint)
	}
	return err
}

// deviceFilesHint says so when the NVIDIA device files are missing, the
// usual reason inside containers started without GPUs.
func deviceFilesHint() string {
	if _, err := os.Stat("/dev/dxg"); err == nil { // WSL2
		return ""
	}
	if m, _ := filepath.Glob("/dev/nvidia[0-9]*"); len(m) == 0 {
		return "no /dev/nvidia0 (no NVIDIA GPU, no driver loaded, or a container started without GPUs)"
	}
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok && v == "" {
		return "CUDA_VISIBLE_DEVICES is set to the empty string"
	}
	return ""
}
