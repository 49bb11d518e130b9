// prelude.h: the CUDA built-ins, for kernel source compiled by the stand-in
// NVRTC (nvrtc.c) with the system C++ compiler. It is included before the
// kernel source; the stand-in driver (cuda.c) defines the per-thread
// indices and runs each CUDA thread as a coroutine (see README.md).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <string>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __constant__ static
// Shared memory: one copy per OS thread of the driver's worker pool, and a
// worker runs one block at a time, so every block sees its own copy.
#define __shared__ static thread_local

struct uint3 { unsigned int x, y, z; };
struct dim3 { unsigned int x, y, z; };
struct float2 { float x, y; };
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
struct int2 { int x, y; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

extern "C" {
// Set by the driver before it resumes a thread (cuda.c).
extern __thread uint3 threadIdx, blockIdx;
extern __thread dim3 blockDim, gridDim;
void standin_syncthreads(void);
void standin_syncwarp(void);
// Publishes this lane's value (size ≤ 8 bytes) to its warp, waits for every
// lane of the warp and returns the warp's 32 slots of 8 bytes.
const void* standin_shfl_exchange(const void* v, unsigned size);
unsigned standin_lane(void);       // lane of this thread in its warp
unsigned standin_warp_lanes(void); // lanes in this thread's warp (32 but in a partial last warp)
void standin_trap(const char* why) __attribute__((noreturn));
}

#define __syncthreads() standin_syncthreads()
#define __syncwarp(...) standin_syncwarp()
#define __trap() standin_trap("__trap()")
#undef assert
#define assert(e) ((e) ? (void)0 : standin_trap("assertion failed: " #e))

// Warp shuffles: src lane as CUDA computes it; a lane outside the warp (or
// past the segment of width) gets its own value back.
template <class T>
inline T standin_shfl(T v, int src) {
	static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
	const char* slots = (const char*)standin_shfl_exchange(&v, sizeof(T));
	if (src < 0 || (unsigned)src >= standin_warp_lanes()) return v;
	T r;
	memcpy(&r, slots + 8 * src, sizeof(T));
	return r;
}
template <class T>
inline T __shfl_sync(unsigned, T v, int srcLane, int width = 32) {
	int lane = (int)standin_lane();
	return standin_shfl(v, (lane & ~(width - 1)) + (srcLane & (width - 1)));
}
template <class T>
inline T __shfl_down_sync(unsigned, T v, unsigned d, int width = 32) {
	int lane = (int)standin_lane();
	return standin_shfl(v, (lane & (width - 1)) + (int)d < width ? lane + (int)d : lane);
}
template <class T>
inline T __shfl_up_sync(unsigned, T v, unsigned d, int width = 32) {
	int lane = (int)standin_lane();
	return standin_shfl(v, (lane & (width - 1)) >= (int)d ? lane - (int)d : lane);
}
template <class T>
inline T __shfl_xor_sync(unsigned, T v, int m, int width = 32) {
	int lane = (int)standin_lane();
	int src = lane ^ m;
	return standin_shfl(v, (src & ~(width - 1)) == (lane & ~(width - 1)) ? src : lane);
}
inline unsigned __ballot_sync(unsigned, int pred) {
	unsigned p = pred != 0;
	const unsigned* s = (const unsigned*)standin_shfl_exchange(&p, 4);
	unsigned r = 0;
	for (unsigned i = 0; i < standin_warp_lanes(); i++) r |= s[2 * i] << i;
	return r;
}
inline int __any_sync(unsigned m, int pred) { return __ballot_sync(m, pred) != 0; }
inline int __all_sync(unsigned m, int pred) {
	unsigned n = standin_warp_lanes();
	return __ballot_sync(m, pred) == (n == 32 ? 0xffffffffu : (1u << n) - 1);
}
inline unsigned __activemask() { unsigned n = standin_warp_lanes(); return n == 32 ? 0xffffffffu : (1u << n) - 1; }

// Atomics: real atomics, since the driver may run blocks on several OS threads.
#define STANDIN_CAS_LOOP(T, U, expr)                                           \
	U* q = (U*)p;                                                              \
	U old = __atomic_load_n(q, __ATOMIC_SEQ_CST), nu;                          \
	do {                                                                       \
		T o;                                                                   \
		memcpy(&o, &old, sizeof o);                                            \
		T n = (expr);                                                          \
		memcpy(&nu, &n, sizeof n);                                             \
	} while (!__atomic_compare_exchange_n(q, &old, nu, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)); \
	T r;                                                                       \
	memcpy(&r, &old, sizeof r);                                                \
	return r;
template <class T>
inline T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline float atomicAdd(float* p, float v) { STANDIN_CAS_LOOP(float, uint32_t, o + v) }
inline double atomicAdd(double* p, double v) { STANDIN_CAS_LOOP(double, uint64_t, o + v) }
template <class T>
inline T atomicSub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
template <class T>
using standin_bits = typename std::conditional<sizeof(T) == 8, uint64_t, uint32_t>::type;
template <class T>
inline T atomicExch(T* p, T v) { STANDIN_CAS_LOOP(T, standin_bits<T>, v) }
template <class T>
inline T atomicMax(T* p, T v) { STANDIN_CAS_LOOP(T, T, o > v ? o : v) }
template <class T>
inline T atomicMin(T* p, T v) { STANDIN_CAS_LOOP(T, T, o < v ? o : v) }
template <class T>
inline T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }
template <class T>
inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
template <class T>
inline T atomicXor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }
inline unsigned atomicInc(unsigned* p, unsigned v) { STANDIN_CAS_LOOP(unsigned, unsigned, o >= v ? 0u : o + 1) }
inline unsigned atomicDec(unsigned* p, unsigned v) { STANDIN_CAS_LOOP(unsigned, unsigned, (o == 0 || o > v) ? v : o - 1) }
template <class T>
inline T atomicCAS(T* p, T cmp, T v) {
	__atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return cmp;
}
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// min/max as CUDA overloads them.
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
template <class A, class B>
inline typename std::common_type<A, B>::type min(A a, B b) { typedef typename std::common_type<A, B>::type C; return (C)a < (C)b ? (C)a : (C)b; }
template <class A, class B>
inline typename std::common_type<A, B>::type max(A a, B b) { typedef typename std::common_type<A, B>::type C; return (C)a > (C)b ? (C)a : (C)b; }

// Intrinsics: the CPU's correctly rounded (or libm) versions.
#define STANDIN_BITS(name, From, To) inline To name(From x) { To y; memcpy(&y, &x, sizeof y); return y; }
STANDIN_BITS(__longlong_as_double, long long, double)
STANDIN_BITS(__double_as_longlong, double, long long)
STANDIN_BITS(__int_as_float, int, float)
STANDIN_BITS(__float_as_int, float, int)
STANDIN_BITS(__uint_as_float, unsigned, float)
STANDIN_BITS(__float_as_uint, float, unsigned)
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __ffs(int x) { return __builtin_ffs(x); }
template <class T>
inline T __ldg(const T* p) { return *p; }

// The kernel table: nvrtc.c appends STANDIN_KERNEL(name) for every
// __global__ function. __standin_launch_<name> calls the kernel with the
// parameters cuLaunchKernel passes (each read with its own type and size);
// __standin_sig_<name> describes them for the "PTX" and the driver's checks.
namespace standin {
template <class... A, size_t... I>
inline void call(void (*f)(A...), void** args, std::index_sequence<I...>) {
	f(*(typename std::remove_cv<A>::type*)args[I]...);
}
template <class... A>
inline void call(void (*f)(A...), void** args) { call(f, args, std::index_sequence_for<A...>()); }
template <class T>
const char* ptype() {
	if (std::is_pointer<T>::value) return "ptr";
	if (std::is_same<T, double>::value) return "f64";
	if (std::is_same<T, float>::value) return "f32";
	switch (sizeof(T)) {
	case 1: return "u8";
	case 2: return "u16";
	case 4: return "u32";
	case 8: return "u64";
	}
	return "b"; // a struct passed by value
}
template <class... A>
const char* sig(void (*)(A...)) {
	static std::string s;
	s.clear();
	const char* t[] = {ptype<A>()..., ""};
	for (size_t i = 0; i < sizeof...(A); i++) s += std::string(i ? " " : "") + t[i];
	return s.c_str();
}
} // namespace standin

#define STANDIN_KERNEL(name)                                                                       \
	extern "C" __attribute__((visibility("default"))) void __standin_launch_##name(void** args) { \
		standin::call(name, args);          \
	}                                                                                              \
	extern "C" __attribute__((visibility("default"))) const char* __standin_sig_##name(void) { return standin::sig(name); }
