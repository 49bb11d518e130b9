// cuda.c: the stand-in libcuda.so.1 — a CUDA driver API that runs on the CPU.
//
// Device memory is host memory (device pointers are host addresses), tracked
// allocation by allocation so that copies out of bounds or after a free are
// refused as a driver would refuse them. Modules are shared objects built by
// the stand-in NVRTC (nvrtc.c); cuLaunchKernel runs every block of the grid,
// each CUDA thread of a block as a coroutine on its own stack, so that the
// threads of a block can meet at __syncthreads and the lanes of a warp can
// exchange values (shuffles). Blocks run on a small pool of OS threads.
// Everything is synchronous: a launch or copy has finished when it returns.
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "standin.h"

#define DEVICE_NAME "agenttrainer CPU stand-in (gpu/standin, not a GPU)"
#define TOTAL_MEM (8ull << 30)
#define CC_MAJOR 8
#define CC_MINOR 0
#define MAX_THREADS 1024
#define MAX_SHARED (48 * 1024)

void standin_complain(const char* fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	fputs("cuda-standin: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

// ---- initialisation and the device ----

static int initialised;

CUresult cuInit(unsigned int flags) {
	const char* v = getenv("CUDA_VISIBLE_DEVICES");
	if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
	if (v && (*v == 0 || *v == '-')) return CUDA_ERROR_NO_DEVICE; // as the real driver does
	initialised = 1;
	return CUDA_SUCCESS;
}

#define NEED_INIT() \
	if (!initialised) return CUDA_ERROR_NOT_INITIALIZED

CUresult cuDriverGetVersion(int* v) {
	if (!v) return CUDA_ERROR_INVALID_VALUE;
	*v = 11080;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* n) {
	NEED_INIT();
	if (!n) return CUDA_ERROR_INVALID_VALUE;
	*n = 1;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* d, int ordinal) {
	NEED_INIT();
	if (!d) return CUDA_ERROR_INVALID_VALUE;
	if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
	*d = 0;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
	NEED_INIT();
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "%s", DEVICE_NAME);
	return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t* bytes, CUdevice d) {
	NEED_INIT();
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	*bytes = TOTAL_MEM;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* u, CUdevice d) {
	NEED_INIT();
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	memcpy(u->bytes, "agt-cpu-standin!", 16);
	return CUDA_SUCCESS;
}

static int nworkers(void);

CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice d) {
	NEED_INIT();
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	if (!v || a <= 0 || a >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = CC_MAJOR; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = CC_MINOR; break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = nworkers(); break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = MAX_THREADS; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 0x7fffffff; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = MAX_SHARED; break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
	case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *v = 65536; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; break;
	default: *v = 0;
	}
	return CUDA_SUCCESS;
}

// ---- contexts: the primary context and created ones, current per OS thread ----

struct CUctx_st {
	int refs;    // primary: retain count; created: 1 until destroyed
	int primary;
	unsigned flags;
};
static struct CUctx_st primaryCtx = {0, 1, 0};
static __thread CUcontext current;
static __thread CUcontext ctxStack[16];
static __thread int ctxDepth;

// NEED_CTX: the calling OS thread must have a live current context (the
// real driver's rule; it catches driver calls from the wrong thread).
#define NEED_CTX()                                                  \
	do {                                                            \
		NEED_INIT();                                                \
		if (!current) return CUDA_ERROR_INVALID_CONTEXT;            \
		if (current->refs <= 0) return CUDA_ERROR_CONTEXT_IS_DESTROYED; \
	} while (0)

CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice d) {
	NEED_INIT();
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	__atomic_add_fetch(&primaryCtx.refs, 1, __ATOMIC_SEQ_CST);
	*c = &primaryCtx;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice d) {
	NEED_INIT();
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	if (__atomic_load_n(&primaryCtx.refs, __ATOMIC_SEQ_CST) <= 0) return CUDA_ERROR_INVALID_CONTEXT;
	__atomic_sub_fetch(&primaryCtx.refs, 1, __ATOMIC_SEQ_CST);
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned* flags, int* active) {
	NEED_INIT();
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	*flags = primaryCtx.flags;
	*active = primaryCtx.refs > 0;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice d, unsigned flags) {
	NEED_INIT();
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	primaryCtx.flags = flags;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxReset(CUdevice d) {
	NEED_INIT();
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	primaryCtx.refs = 0;
	return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext* c, unsigned flags, CUdevice d) {
	NEED_INIT();
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	CUcontext n = calloc(1, sizeof *n);
	n->refs = 1;
	n->flags = flags;
	if (ctxDepth < 16) ctxStack[ctxDepth++] = current;
	current = *c = n;
	return CUDA_SUCCESS;
}

CUresult cuCtxDestroy(CUcontext c) {
	NEED_INIT();
	if (!c || c->primary || c->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
	c->refs = 0; // kept (not freed) so that later use says "destroyed"
	if (current == c) current = NULL;
	return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext c) {
	NEED_INIT();
	if (c && c->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
	current = c;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* c) {
	NEED_INIT();
	*c = current;
	return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext c) {
	NEED_INIT();
	if (!c || c->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
	if (ctxDepth >= 16) return CUDA_ERROR_INVALID_VALUE;
	ctxStack[ctxDepth++] = current;
	current = c;
	return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext* c) {
	NEED_INIT();
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	if (c) *c = current;
	current = ctxDepth > 0 ? ctxStack[--ctxDepth] : NULL;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* d) {
	NEED_CTX();
	*d = 0;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned* f) {
	NEED_CTX();
	*f = current->flags;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetApiVersion(CUcontext c, unsigned* v) {
	NEED_INIT();
	(void)c;
	*v = 3020;
	return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
	NEED_CTX();
	return CUDA_SUCCESS; // everything ran when it was called
}

static size_t limits[16];
CUresult cuCtxSetLimit(CUlimit l, size_t v) {
	NEED_CTX();
	if ((unsigned)l >= 16) return CUDA_ERROR_INVALID_VALUE;
	limits[l] = v;
	return CUDA_SUCCESS;
}
CUresult cuCtxGetLimit(size_t* v, CUlimit l) {
	NEED_CTX();
	if ((unsigned)l >= 16) return CUDA_ERROR_INVALID_VALUE;
	*v = limits[l];
	return CUDA_SUCCESS;
}
CUresult cuCtxGetCacheConfig(CUfunc_cache* c) { NEED_CTX(); *c = CU_FUNC_CACHE_PREFER_NONE; return CUDA_SUCCESS; }
CUresult cuCtxSetCacheConfig(CUfunc_cache c) { NEED_CTX(); (void)c; return CUDA_SUCCESS; }
CUresult cuCtxGetSharedMemConfig(CUsharedconfig* c) { NEED_CTX(); *c = CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE; return CUDA_SUCCESS; }
CUresult cuCtxSetSharedMemConfig(CUsharedconfig c) { NEED_CTX(); (void)c; return CUDA_SUCCESS; }
CUresult cuCtxGetStreamPriorityRange(int* lo, int* hi) { NEED_CTX(); *lo = 0; *hi = 0; return CUDA_SUCCESS; }

// ---- memory: every allocation its own mapping, followed by a guard page ----
//
// An allocation ends (rounded up to 256 bytes) where its guard page begins,
// so a kernel that runs off its end faults at once. New memory holds 0xff
// bytes (a float NaN), not zeros, as real device memory holds garbage. A
// freed allocation stays reserved with no access, so that a late use faults
// and its addresses are never handed out again.

typedef struct {
	uintptr_t base;
	size_t size;
	void* map;
	size_t maplen;
	int live;
} alloc_t;
static alloc_t* allocs;
static size_t nallocs, capallocs, liveBytes;
static pthread_mutex_t allocMu = PTHREAD_MUTEX_INITIALIZER;

// find returns the allocation containing p (live or freed), or NULL.
static alloc_t* find(uintptr_t p) {
	for (size_t i = nallocs; i-- > 0;)
		if (p >= allocs[i].base && p < allocs[i].base + allocs[i].size + (allocs[i].size == 0)) return &allocs[i];
	return NULL;
}

int standin_in_alloc(uintptr_t p, size_t bytes) {
	pthread_mutex_lock(&allocMu);
	alloc_t* a = find(p);
	int ok = a && a->live && p + bytes <= a->base + a->size;
	pthread_mutex_unlock(&allocMu);
	return ok;
}

// check says why [p, p+bytes) is not device memory a copy may touch.
static CUresult check(const char* call, CUdeviceptr p, size_t bytes) {
	pthread_mutex_lock(&allocMu);
	alloc_t* a = find((uintptr_t)p);
	CUresult r = CUDA_SUCCESS;
	if (!a) {
		standin_complain("%s: 0x%llx is not device memory", call, (unsigned long long)p);
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (!a->live) {
		standin_complain("%s: 0x%llx was freed (use after free)", call, (unsigned long long)p);
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (p + bytes > a->base + a->size) {
		standin_complain("%s: %zu bytes at offset %zu run past the end of a %zu-byte allocation", call, bytes,
			(size_t)(p - a->base), a->size);
		r = CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&allocMu);
	return r;
}

CUresult cuMemAlloc(CUdeviceptr* dp, size_t bytes) {
	NEED_CTX();
	if (!dp || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t rounded = (bytes + 255) & ~(size_t)255;
	size_t datalen = (rounded + page - 1) & ~(page - 1);
	pthread_mutex_lock(&allocMu);
	if (liveBytes + rounded > TOTAL_MEM) {
		pthread_mutex_unlock(&allocMu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	char* m = mmap(NULL, datalen + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		pthread_mutex_unlock(&allocMu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	mprotect(m + datalen, page, PROT_NONE);
	uintptr_t base = (uintptr_t)m + datalen - rounded;
	memset((void*)base, 0xff, rounded);
	if (nallocs == capallocs) {
		capallocs = capallocs ? 2 * capallocs : 1024;
		allocs = realloc(allocs, capallocs * sizeof *allocs);
	}
	allocs[nallocs++] = (alloc_t){base, bytes, m, datalen + page, 1};
	liveBytes += rounded;
	pthread_mutex_unlock(&allocMu);
	*dp = (CUdeviceptr)base;
	return CUDA_SUCCESS;
}

CUresult cuMemAllocPitch(CUdeviceptr* dp, size_t* pitch, size_t width, size_t height, unsigned elem) {
	(void)elem;
	*pitch = (width + 255) & ~(size_t)255;
	return cuMemAlloc(dp, *pitch * height);
}

CUresult cuMemFree(CUdeviceptr p) {
	NEED_CTX();
	if (p == 0) return CUDA_SUCCESS;
	pthread_mutex_lock(&allocMu);
	alloc_t* a = find((uintptr_t)p);
	CUresult r = CUDA_SUCCESS;
	if (!a || a->base != (uintptr_t)p) {
		standin_complain("cuMemFree: 0x%llx is not the start of an allocation", (unsigned long long)p);
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (!a->live) {
		standin_complain("cuMemFree: 0x%llx was already freed", (unsigned long long)p);
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		a->live = 0;
		liveBytes -= (a->size + 255) & ~(size_t)255;
		madvise(a->map, a->maplen, MADV_DONTNEED);
		mprotect(a->map, a->maplen, PROT_NONE);
	}
	pthread_mutex_unlock(&allocMu);
	return r;
}

CUresult cuMemGetInfo(size_t* free, size_t* total) {
	NEED_CTX();
	*free = TOTAL_MEM - liveBytes;
	*total = TOTAL_MEM;
	return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
	NEED_CTX();
	pthread_mutex_lock(&allocMu);
	alloc_t* a = find((uintptr_t)p);
	int ok = a && a->live;
	if (ok) {
		if (base) *base = a->base;
		if (size) *size = a->size;
	}
	pthread_mutex_unlock(&allocMu);
	return ok ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

#define CHECK(call, p, n)                          \
	do {                                           \
		CUresult r_ = check(call, p, n);           \
		if (r_ != CUDA_SUCCESS) return r_;         \
	} while (0)

CUresult cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
	NEED_CTX();
	CHECK("cuMemcpyHtoD", dst, n);
	memcpy((void*)dst, src, n);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
	NEED_CTX();
	CHECK("cuMemcpyDtoH", src, n);
	memcpy(dst, (const void*)src, n);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
	NEED_CTX();
	CHECK("cuMemcpyDtoD (destination)", dst, n);
	CHECK("cuMemcpyDtoD (source)", src, n);
	memmove((void*)dst, (const void*)src, n);
	return CUDA_SUCCESS;
}

// cuMemcpy and cuMemcpyAsync take unified addresses: device or host.
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
	NEED_CTX();
	int dd = find((uintptr_t)dst) != NULL, sd = find((uintptr_t)src) != NULL;
	if (dd) CHECK("cuMemcpy (destination)", dst, n);
	if (sd) CHECK("cuMemcpy (source)", src, n);
	memmove((void*)dst, (const void*)src, n);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) { (void)s; return cuMemcpy(dst, src, n); }
CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) { (void)s; return cuMemcpyHtoD(dst, src, n); }
CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) { (void)s; return cuMemcpyDtoH(dst, src, n); }
CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) { (void)s; return cuMemcpyDtoD(dst, src, n); }

#define MEMSET(name, T, check_name)                                        \
	CUresult name(CUdeviceptr p, T v, size_t n) {                          \
		NEED_CTX();                                                        \
		if (p % sizeof(T)) return CUDA_ERROR_INVALID_VALUE;                \
		CHECK(check_name, p, n * sizeof(T));                               \
		for (size_t i = 0; i < n; i++) ((T*)p)[i] = v;                     \
		return CUDA_SUCCESS;                                               \
	}                                                                      \
	CUresult name##Async(CUdeviceptr p, T v, size_t n, CUstream s) { (void)s; return name(p, v, n); }
MEMSET(cuMemsetD8, unsigned char, "cuMemsetD8")
MEMSET(cuMemsetD16, unsigned short, "cuMemsetD16")
MEMSET(cuMemsetD32, unsigned int, "cuMemsetD32")

// ---- streams and events: everything is synchronous ----

struct CUstream_st { unsigned flags; int prio; };
struct CUevent_st { struct timespec t; int recorded; };

CUresult cuStreamCreate(CUstream* s, unsigned flags) {
	NEED_CTX();
	*s = calloc(1, sizeof **s);
	(*s)->flags = flags;
	return CUDA_SUCCESS;
}
CUresult cuStreamCreateWithPriority(CUstream* s, unsigned flags, int prio) {
	CUresult r = cuStreamCreate(s, flags);
	if (r == CUDA_SUCCESS) (*s)->prio = prio;
	return r;
}
CUresult cuStreamDestroy(CUstream s) { NEED_CTX(); if (!s) return CUDA_ERROR_INVALID_HANDLE; free(s); return CUDA_SUCCESS; }
CUresult cuStreamSynchronize(CUstream s) { NEED_CTX(); (void)s; return CUDA_SUCCESS; }
CUresult cuStreamQuery(CUstream s) { NEED_CTX(); (void)s; return CUDA_SUCCESS; }
CUresult cuStreamGetFlags(CUstream s, unsigned* f) { NEED_CTX(); *f = s ? s->flags : 0; return CUDA_SUCCESS; }
CUresult cuStreamGetPriority(CUstream s, int* p) { NEED_CTX(); *p = s ? s->prio : 0; return CUDA_SUCCESS; }
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned f) { NEED_CTX(); (void)s, (void)e, (void)f; return CUDA_SUCCESS; }

CUresult cuEventCreate(CUevent* e, unsigned flags) {
	NEED_CTX();
	(void)flags;
	*e = calloc(1, sizeof **e);
	return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent e) { NEED_CTX(); if (!e) return CUDA_ERROR_INVALID_HANDLE; free(e); return CUDA_SUCCESS; }
CUresult cuEventRecord(CUevent e, CUstream s) {
	NEED_CTX();
	(void)s;
	if (!e) return CUDA_ERROR_INVALID_HANDLE;
	clock_gettime(CLOCK_MONOTONIC, &e->t);
	e->recorded = 1;
	return CUDA_SUCCESS;
}
CUresult cuEventQuery(CUevent e) { NEED_CTX(); return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
CUresult cuEventSynchronize(CUevent e) { NEED_CTX(); return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
CUresult cuEventElapsedTime(float* ms, CUevent a, CUevent b) {
	NEED_CTX();
	if (!a || !b) return CUDA_ERROR_INVALID_HANDLE;
	if (!a->recorded || !b->recorded) return CUDA_ERROR_NOT_READY;
	*ms = (float)((b->t.tv_sec - a->t.tv_sec) * 1e3 + (b->t.tv_nsec - a->t.tv_nsec) / 1e6);
	return CUDA_SUCCESS;
}

// ---- modules: shared objects made by the stand-in NVRTC ----

struct CUmod_st { void* so; };
struct CUfunc_st {
	void (*launch)(void** args);
	char name[128];
	int nparams;
	char ptr[64]; // ptr[i]: parameter i is a pointer
};

CUresult cuModuleLoadData(CUmodule* m, const void* image) {
	NEED_CTX();
	if (!m || !image) return CUDA_ERROR_INVALID_VALUE;
	const char* p = strstr((const char*)image, "\n.standin_module ");
	if (!p) {
		standin_complain("cuModuleLoadData: not a module of the stand-in NVRTC (real PTX cannot run here)");
		return CUDA_ERROR_INVALID_PTX;
	}
	p += strlen("\n.standin_module ");
	char path[4096];
	size_t n = strcspn(p, "\n");
	if (n >= sizeof path) return CUDA_ERROR_INVALID_PTX;
	memcpy(path, p, n);
	path[n] = 0;
	void* so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!so) {
		standin_complain("cuModuleLoadData: %s", dlerror());
		return CUDA_ERROR_FILE_NOT_FOUND;
	}
	*m = calloc(1, sizeof **m);
	(*m)->so = so;
	return CUDA_SUCCESS;
}

CUresult cuModuleLoadDataEx(CUmodule* m, const void* image, unsigned n, CUjit_option* o, void** v) {
	(void)n, (void)o, (void)v;
	return cuModuleLoadData(m, image);
}

CUresult cuModuleUnload(CUmodule m) {
	NEED_CTX();
	if (!m || !m->so) return CUDA_ERROR_INVALID_HANDLE;
	dlclose(m->so);
	m->so = NULL; // the handle stays allocated: a later use is refused
	return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
	NEED_CTX();
	if (!f || !name) return CUDA_ERROR_INVALID_VALUE;
	if (!m || !m->so) return CUDA_ERROR_INVALID_HANDLE;
	char sym[160];
	snprintf(sym, sizeof sym, "__standin_launch_%s", name);
	void* launch = dlsym(m->so, sym);
	snprintf(sym, sizeof sym, "__standin_sig_%s", name);
	const char* (*sig)(void) = (const char* (*)(void))dlsym(m->so, sym);
	if (!launch || !sig || strlen(name) >= sizeof((*f)->name)) return CUDA_ERROR_NOT_FOUND;
	CUfunction fn = calloc(1, sizeof *fn);
	fn->launch = (void (*)(void**))launch;
	strcpy(fn->name, name);
	for (const char* s = sig(); *s && fn->nparams < 64; fn->nparams++) {
		fn->ptr[fn->nparams] = strncmp(s, "ptr", 3) == 0;
		s += strcspn(s, " ");
		s += *s == ' ';
	}
	*f = fn;
	return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int* v, CUfunction_attribute a, CUfunction f) {
	NEED_CTX();
	if (!f) return CUDA_ERROR_INVALID_HANDLE;
	*v = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? MAX_THREADS : 0;
	return CUDA_SUCCESS;
}
CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache c) { NEED_CTX(); (void)f, (void)c; return CUDA_SUCCESS; }
CUresult cuFuncSetSharedMemConfig(CUfunction f, CUsharedconfig c) { NEED_CTX(); (void)f, (void)c; return CUDA_SUCCESS; }

// ---- running a grid ----
//
// A worker (an OS thread) runs one block at a time. Each CUDA thread of the
// block is a coroutine ("slot") with its own stack; the worker resumes the
// slots in turn, and a slot runs until it waits at a barrier (or finishes).
// A barrier counts arrivals; the last thread to arrive releases it, and the
// waiting threads see the new generation when next resumed. __syncthreads is
// a barrier of the block, a shuffle a barrier of the warp (32 lanes) with
// double-buffered value slots. A thread that returns stops being counted, as
// on the hardware. If a whole round resumes every waiting thread and none
// gets further, the block can never finish: the launch fails with
// CUDA_ERROR_LAUNCH_TIMEOUT (a real GPU would hang until the watchdog).
//
// Coroutines start with makecontext/setcontext once per slot and switch with
// _setjmp/_longjmp afterwards (no signal-mask system call per switch).

typedef struct { unsigned x, y, z; } uint3; // as the prelude (and CUDA) declare them
typedef struct { unsigned x, y, z; } dim3;
__thread uint3 threadIdx, blockIdx;
__thread dim3 blockDim, gridDim;

#define STACK_BYTES (128 * 1024)

typedef struct {
	unsigned arrived, expected, gen;
} barrier_t;

typedef struct {
	jmp_buf jb;
	ucontext_t uc;
	char* stack;
	int started, done;
	unsigned shfl;  // shuffles done: picks the value buffer
	uint3 tid;
	unsigned lane, warp;
} slot_t;

typedef struct launch {
	CUfunction fn;
	void** args;
	dim3 grid, block;
	unsigned nthreads;
	unsigned long long nblocks;
	unsigned long long next; // next block to run (atomic)
	int err;                 // first error (atomic)
	char why[512];
} launch_t;

typedef struct {
	jmp_buf sched;
	slot_t* slots;
	unsigned nslots;
	slot_t* cur;
	launch_t* job;
	barrier_t block, warps[MAX_THREADS / 32];
	unsigned long long vals[MAX_THREADS / 32][2][32];
	int progress, abort;
	const char* abortWhy;
} worker_t;

static __thread worker_t* self;

static void yield(void) {
	if (!_setjmp(self->cur->jb)) _longjmp(self->sched, 1);
}

static void release(barrier_t* b) {
	b->arrived = 0;
	b->gen++;
}

static void wait_at(barrier_t* b) {
	unsigned gen = b->gen;
	self->progress = 1;
	if (++b->arrived == b->expected) {
		release(b);
		return;
	}
	while (b->gen == gen) yield();
}

void standin_syncthreads(void) { wait_at(&self->block); }
void standin_syncwarp(void) { wait_at(&self->warps[self->cur->warp]); }
unsigned standin_lane(void) { return self->cur->lane; }
unsigned standin_warp_lanes(void) {
	unsigned first = self->cur->warp * 32, n = self->job->nthreads - first;
	return n < 32 ? n : 32;
}

const void* standin_shfl_exchange(const void* v, unsigned size) {
	slot_t* s = self->cur;
	unsigned long long(*buf)[32] = &self->vals[s->warp][s->shfl++ & 1];
	(*buf)[s->lane] = 0;
	memcpy(&(*buf)[s->lane], v, size);
	standin_syncwarp();
	return *buf;
}

void standin_trap(const char* why) {
	self->abort = 1;
	self->abortWhy = why;
	_longjmp(self->sched, 1);
}

static void slot_main(void) {
	for (;;) {
		worker_t* w = self;
		w->job->fn->launch(w->job->args);
		// This thread no longer counts at its block's and warp's barriers.
		slot_t* s = w->cur;
		s->done = 1;
		w->progress = 1;
		barrier_t* bs[2] = {&w->block, &w->warps[s->warp]};
		for (int i = 0; i < 2; i++) {
			bs[i]->expected--;
			if (bs[i]->arrived > 0 && bs[i]->arrived == bs[i]->expected) release(bs[i]);
		}
		yield(); // resumed later for a thread of another block
	}
}

static int worker_init(worker_t* w, unsigned n) {
	if (w->nslots >= n) return 0;
	w->slots = realloc(w->slots, n * sizeof *w->slots);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (unsigned i = w->nslots; i < n; i++) {
		slot_t* s = &w->slots[i];
		memset(s, 0, sizeof *s);
		char* m = mmap(NULL, STACK_BYTES + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED) return -1;
		mprotect(m, page, PROT_NONE); // stack overflow faults
		s->stack = m + page;
	}
	w->nslots = n;
	return 0;
}

static void fail(launch_t* L, int code, const char* why, unsigned long long block) {
	int zero = 0;
	if (__atomic_compare_exchange_n(&L->err, &zero, code, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		snprintf(L->why, sizeof L->why, "%s: block %llu: %s", L->fn->name, block, why);
}

// resume runs thread s until it waits or finishes.
static __attribute__((noinline)) void resume(worker_t* w, slot_t* s) {
	w->cur = s;
	threadIdx = s->tid;
	if (_setjmp(w->sched)) return;
	if (!s->started) {
		s->started = 1;
		getcontext(&s->uc);
		s->uc.uc_stack.ss_sp = s->stack;
		s->uc.uc_stack.ss_size = STACK_BYTES;
		s->uc.uc_link = NULL;
		makecontext(&s->uc, slot_main, 0);
		setcontext(&s->uc);
	}
	_longjmp(s->jb, 1);
}

static void run_block(worker_t* w, launch_t* L, unsigned long long b) {
	unsigned n = L->nthreads;
	blockIdx = (uint3){(unsigned)(b % L->grid.x), (unsigned)(b / L->grid.x % L->grid.y),
		(unsigned)(b / L->grid.x / L->grid.y)};
	blockDim = L->block;
	gridDim = L->grid;
	w->block = (barrier_t){0, n, 0};
	for (unsigned i = 0; i < (n + 31) / 32; i++) w->warps[i] = (barrier_t){0, n - 32 * i < 32 ? n - 32 * i : 32, 0};
	for (unsigned i = 0; i < n; i++) {
		slot_t* s = &w->slots[i];
		s->done = 0;
		s->shfl = 0;
		s->tid = (uint3){i % L->block.x, i / L->block.x % L->block.y, i / L->block.x / L->block.y};
		s->lane = i % 32;
		s->warp = i / 32;
	}
	unsigned live = n;
	w->abort = 0;
	while (live > 0) {
		w->progress = 0;
		for (unsigned i = 0; i < n && !w->abort; i++) {
			slot_t* s = &w->slots[i];
			if (s->done) continue;
			resume(w, s);
			if (s->done) live--;
		}
		if (w->abort || (!w->progress && live > 0)) {
			if (w->abort) fail(L, CUDA_ERROR_ASSERT, w->abortWhy, b);
			else fail(L, CUDA_ERROR_LAUNCH_TIMEOUT, "threads wait at barriers that can never open (a __syncthreads or shuffle not reached by every thread)", b);
			for (unsigned i = 0; i < n; i++) // abandon the block: its coroutines start afresh next time
				if (!w->slots[i].done) w->slots[i].started = 0;
			return;
		}
	}
}

static void run_blocks(worker_t* w, launch_t* L) {
	if (worker_init(w, L->nthreads) != 0) {
		fail(L, CUDA_ERROR_OUT_OF_MEMORY, "no memory for thread stacks", 0);
		return;
	}
	w->job = L;
	self = w;
	for (;;) {
		unsigned long long b = __atomic_fetch_add(&L->next, 1, __ATOMIC_SEQ_CST);
		if (b >= L->nblocks || __atomic_load_n(&L->err, __ATOMIC_SEQ_CST)) break;
		run_block(w, L, b);
	}
}

// The pool: the calling thread plus nworkers()-1 helpers, started on first use.
static struct {
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	launch_t* job;
	unsigned long gen;
	int busy, started;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0};

static int nworkers(void) {
	static int n;
	if (!n) {
		const char* e = getenv("CUDA_STANDIN_WORKERS");
		n = e ? atoi(e) : (int)sysconf(_SC_NPROCESSORS_ONLN);
		if (n < 1) n = 1;
		if (n > 16) n = 16;
	}
	return n;
}

static void* helper(void* arg) {
	(void)arg;
	worker_t* w = calloc(1, sizeof *w);
	unsigned long seen = 0;
	pthread_mutex_lock(&pool.mu);
	for (;;) {
		while (pool.gen == seen) pthread_cond_wait(&pool.work, &pool.mu);
		seen = pool.gen;
		launch_t* L = pool.job;
		pthread_mutex_unlock(&pool.mu);
		run_blocks(w, L);
		pthread_mutex_lock(&pool.mu);
		if (--pool.busy == 0) pthread_cond_signal(&pool.done);
	}
	return NULL;
}

static __thread worker_t* callerWorker;

static void run_grid(launch_t* L) {
	if (!callerWorker) callerWorker = calloc(1, sizeof *callerWorker);
	int helpers = nworkers() - 1;
	if (L->nblocks < 2) helpers = 0;
	pthread_mutex_lock(&pool.mu);
	if (helpers > 0 && !pool.started) {
		for (int i = 0; i < helpers; i++) {
			pthread_t t;
			pthread_create(&t, NULL, helper, NULL);
			pthread_detach(t);
		}
		pool.started = 1;
	}
	if (helpers > 0) {
		pool.job = L;
		pool.busy = helpers;
		pool.gen++;
		pthread_cond_broadcast(&pool.work);
	}
	pthread_mutex_unlock(&pool.mu);
	run_blocks(callerWorker, L);
	if (helpers > 0) {
		pthread_mutex_lock(&pool.mu);
		while (pool.busy > 0) pthread_cond_wait(&pool.done, &pool.mu);
		pthread_mutex_unlock(&pool.mu);
	}
}

static pthread_mutex_t launchMu = PTHREAD_MUTEX_INITIALIZER;

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
	unsigned shared, CUstream stream, void** params, void** extra) {
	NEED_CTX();
	(void)stream;
	if (!f) return CUDA_ERROR_INVALID_HANDLE;
	if (extra) return CUDA_ERROR_NOT_SUPPORTED;
	if (!gx || !gy || !gz || gy > 65535 || gz > 65535 || gx > 0x7fffffffu) {
		standin_complain("%s: grid %ux%ux%u out of range", f->name, gx, gy, gz);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (!bx || !by || !bz || bx > 1024 || by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > MAX_THREADS) {
		standin_complain("%s: block %ux%ux%u: at most %d threads, x and y at most 1024, z at most 64", f->name, bx, by,
			bz, MAX_THREADS);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (shared > MAX_SHARED) {
		standin_complain("%s: %u bytes of dynamic shared memory, at most %d", f->name, shared, MAX_SHARED);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (f->nparams > 0 && !params) return CUDA_ERROR_INVALID_VALUE;
	// A pointer argument must point into (or just past) a live allocation:
	// a GPU would fault on the first access to anything else.
	for (int i = 0; i < f->nparams; i++) {
		if (!f->ptr[i]) continue;
		uintptr_t p = *(uintptr_t*)params[i];
		if (p && !standin_in_alloc(p, 0) && !(p > 0 && standin_in_alloc(p - 1, 1))) {
			standin_complain("%s: argument %d (0x%lx) is not live device memory", f->name, i, (unsigned long)p);
			return CUDA_ERROR_ILLEGAL_ADDRESS;
		}
	}
	launch_t L = {.fn = f, .args = params, .grid = {gx, gy, gz}, .block = {bx, by, bz}, .nthreads = bx * by * bz,
		.nblocks = (unsigned long long)gx * gy * gz};
	pthread_mutex_lock(&launchMu); // one grid at a time
	run_grid(&L);
	pthread_mutex_unlock(&launchMu);
	if (L.err) standin_complain("%s", L.why);
	return (CUresult)L.err;
}

// ---- error names ----

static const struct {
	CUresult r;
	const char *name, *text;
} errs[] = {
	{CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
	{CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	{CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
	{CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
	{CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	{CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	{CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
	{CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	{CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
	{CUDA_ERROR_ASSERT, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
	{CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported (by the CPU stand-in)"},
	{CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

CUresult cuGetErrorName(CUresult r, const char** s) {
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
		if (errs[i].r == r) return *s = errs[i].name, CUDA_SUCCESS;
	*s = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult r, const char** s) {
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
		if (errs[i].r == r) return *s = errs[i].text, CUDA_SUCCESS;
	*s = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}
