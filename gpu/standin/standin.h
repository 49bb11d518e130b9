// standin.h: what the stand-in libraries share (libcuda.so.1 exports these to
// libcublas and to the kernel modules).
#ifndef STANDIN_H
#define STANDIN_H
#include <stddef.h>
#include <stdint.h>

// standin_in_alloc reports whether [p, p+bytes) lies inside one live device
// allocation.
int standin_in_alloc(uintptr_t p, size_t bytes);

// standin_complain prints a diagnostic to stderr (prefixed "cuda-standin: ").
void standin_complain(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
#endif
