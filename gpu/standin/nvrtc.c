// nvrtc.c: the stand-in libnvrtc.so.11.2. nvrtcCompileProgram compiles the
// CUDA C source with the system C++ compiler (g++, or $CUDA_STANDIN_CXX)
// after prelude.h, into a shared object in a cache directory keyed by a hash
// of everything that goes into it. The "PTX" it hands back names that shared
// object for the stand-in cuModuleLoadData and lists each kernel as a PTX
// .entry with its parameters, so that tools reading the PTX's signatures
// keep working. It behaves as NVRTC 11.8 does towards options: unknown ones
// and architectures NVRTC 11.8 lacks are refused with its messages.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <nvrtc.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

struct _nvrtcProgram {
	char *src, *name, *ptx, *log;
};

static char* dupstr(const char* s) { return strdup(s ? s : ""); }

nvrtcResult nvrtcVersion(int* major, int* minor) {
	if (!major || !minor) return NVRTC_ERROR_INVALID_INPUT;
	*major = 11;
	*minor = 8;
	return NVRTC_SUCCESS;
}

const char* nvrtcGetErrorString(nvrtcResult r) {
	switch (r) {
	case NVRTC_SUCCESS: return "NVRTC_SUCCESS";
	case NVRTC_ERROR_OUT_OF_MEMORY: return "NVRTC_ERROR_OUT_OF_MEMORY";
	case NVRTC_ERROR_INVALID_INPUT: return "NVRTC_ERROR_INVALID_INPUT";
	case NVRTC_ERROR_INVALID_PROGRAM: return "NVRTC_ERROR_INVALID_PROGRAM";
	case NVRTC_ERROR_INVALID_OPTION: return "NVRTC_ERROR_INVALID_OPTION";
	case NVRTC_ERROR_COMPILATION: return "NVRTC_ERROR_COMPILATION";
	default: return "NVRTC_ERROR_INTERNAL_ERROR";
	}
}

nvrtcResult nvrtcCreateProgram(nvrtcProgram* p, const char* src, const char* name, int nh, const char* const* headers,
	const char* const* includeNames) {
	(void)headers, (void)includeNames;
	if (!p || !src) return NVRTC_ERROR_INVALID_INPUT;
	if (nh > 0) return NVRTC_ERROR_INVALID_INPUT; // in-memory headers: not in the stand-in
	*p = calloc(1, sizeof **p);
	(*p)->src = dupstr(src);
	(*p)->name = dupstr(name ? name : "default_program");
	return NVRTC_SUCCESS;
}

nvrtcResult nvrtcDestroyProgram(nvrtcProgram* p) {
	if (!p || !*p) return NVRTC_ERROR_INVALID_PROGRAM;
	free((*p)->src);
	free((*p)->name);
	free((*p)->ptx);
	free((*p)->log);
	free(*p);
	*p = NULL;
	return NVRTC_SUCCESS;
}

// A growing string.
typedef struct {
	char* s;
	size_t n, cap;
} buf_t;
static void put(buf_t* b, const char* s, size_t n) {
	if (b->n + n + 1 > b->cap) {
		b->cap = 2 * (b->n + n + 1);
		b->s = realloc(b->s, b->cap);
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = 0;
}
static void puts_(buf_t* b, const char* s) { put(b, s, strlen(s)); }

static char* readfile(const char* path) {
	FILE* f = fopen(path, "rb");
	if (!f) return NULL;
	buf_t b = {0};
	char tmp[65536];
	size_t n;
	while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) put(&b, tmp, n);
	fclose(f);
	return b.s ? b.s : strdup("");
}

// kernels appends the name of every __global__ function of src to names
// (space-separated), skipping comments and string literals.
static void kernels(const char* s, buf_t* names) {
	while (*s) {
		if (s[0] == '/' && s[1] == '/') s += strcspn(s, "\n");
		else if (s[0] == '/' && s[1] == '*') {
			const char* e = strstr(s + 2, "*/");
			s = e ? e + 2 : s + strlen(s);
		} else if (*s == '"') {
			for (s++; *s && *s != '"'; s++)
				if (*s == '\\' && s[1]) s++;
			if (*s) s++;
		} else if (strncmp(s, "__global__", 10) == 0) {
			// The identifier right before the first '(' is the name
			// (skipping __launch_bounds__(...)).
			const char* p = s + 10;
			for (;;) {
				const char* q = strchr(p, '(');
				if (!q) return;
				const char* e = q;
				while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n')) e--;
				const char* b = e;
				while (b > p && (b[-1] == '_' || (b[-1] >= '0' && b[-1] <= '9') || ((b[-1] | 32) >= 'a' && (b[-1] | 32) <= 'z'))) b--;
				if (e - b == 17 && strncmp(b, "__launch_bounds__", 17) == 0) {
					p = strchr(q, ')');
					if (!p) return;
					continue;
				}
				if (names->n) puts_(names, " ");
				put(names, b, (size_t)(e - b));
				s = q;
				break;
			}
		} else
			s++;
	}
}

static const char* archs[] = {"35", "37", "50", "52", "53", "60", "61", "62", "70", "72", "75", "80", "86", "87", "89", "90", NULL};

// stand-in directory: where this library and prelude.h are.
static char* libdir(void) {
	Dl_info info;
	if (!dladdr((void*)nvrtcVersion, &info) || !info.dli_fname) return strdup(".");
	char* p = strdup(info.dli_fname);
	char* d = strdup(dirname(p));
	free(p);
	return d;
}

static char* cachedir(void) {
	const char* e = getenv("CUDA_STANDIN_CACHE");
	char path[4096];
	if (e && *e) snprintf(path, sizeof path, "%s", e);
	else if ((e = getenv("XDG_CACHE_HOME")) && *e) snprintf(path, sizeof path, "%s/agenttrainer/cuda-standin", e);
	else if ((e = getenv("HOME")) && *e) snprintf(path, sizeof path, "%s/.cache/agenttrainer/cuda-standin", e);
	else snprintf(path, sizeof path, "/tmp/agenttrainer-cuda-standin");
	// mkdir -p
	for (char* p = path + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(path, 0755);
			*p = '/';
		}
	mkdir(path, 0755);
	return strdup(path);
}

static unsigned long long fnv(unsigned long long h, const char* s, size_t n) {
	for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static void setlog(nvrtcProgram p, const char* s) {
	free(p->log);
	p->log = dupstr(s);
}

// run runs argv, its output going to logpath; it returns the exit status.
static int run(char* const* argv, const char* logpath) {
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	pid_t pid;
	int st = 0, err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err) return -1;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int nopt, const char* const* opts) {
	if (!prog) return NVRTC_ERROR_INVALID_PROGRAM;
	char arch[32] = "compute_52"; // NVRTC 11.8's default
	int fmad = 1;
	char* argv[256];
	int argc = 0, nuser = 0;
	char* user[64];
	for (int i = 0; i < nopt; i++) {
		const char* o = opts[i];
		const char* v = NULL;
		if (!strncmp(o, "--gpu-architecture=", 19)) v = o + 19;
		else if (!strncmp(o, "-arch=", 6)) v = o + 6;
		if (v) {
			int ok = 0;
			for (int a = 0; archs[a]; a++)
				if ((!strncmp(v, "compute_", 8) && !strcmp(v + 8, archs[a])) || (!strncmp(v, "sm_", 3) && !strcmp(v + 3, archs[a])))
					ok = 1;
			if (!ok) {
				setlog(prog, "nvrtc: error: invalid value for --gpu-architecture (-arch)\n");
				return NVRTC_ERROR_INVALID_OPTION;
			}
			snprintf(arch, sizeof arch, "%s", v);
		} else if (!strcmp(o, "--fmad=false") || !strcmp(o, "-fmad=false")) fmad = 0;
		else if (!strcmp(o, "--fmad=true") || !strcmp(o, "-fmad=true")) fmad = 1;
		else if ((!strncmp(o, "-D", 2) || !strncmp(o, "-I", 2)) && nuser < 64) user[nuser++] = (char*)o;
		else if (!strncmp(o, "--std=", 6) || !strncmp(o, "-std=", 5) || !strcmp(o, "-default-device") ||
			!strcmp(o, "--device-as-default-execution-space") || !strcmp(o, "-lineinfo") ||
			!strcmp(o, "--generate-line-info") || !strcmp(o, "-G") || !strcmp(o, "--device-debug") ||
			!strcmp(o, "--use_fast_math") || !strcmp(o, "-use_fast_math") || !strcmp(o, "--restrict") ||
			!strcmp(o, "-restrict"))
			; // no effect on the CPU
		else {
			char msg[512];
			snprintf(msg, sizeof msg, "nvrtc: error: unrecognized option %s\n", o);
			setlog(prog, msg);
			return NVRTC_ERROR_INVALID_OPTION;
		}
	}

	char *dir = libdir(), *cache = cachedir();
	char prelude[4200], lib[4200];
	snprintf(prelude, sizeof prelude, "%s/prelude.h", dir);
	snprintf(lib, sizeof lib, "-Wl,-rpath,%s", dir);
	char* pre = readfile(prelude);
	if (!pre) {
		setlog(prog, "cuda-standin: prelude.h is missing next to libnvrtc.so.11.2\n");
		free(dir), free(cache);
		return NVRTC_ERROR_INTERNAL_ERROR;
	}
	// The source as compiled: the program, then the kernel table.
	buf_t src = {0}, names = {0};
	puts_(&src, prog->src);
	puts_(&src, "\n");
	kernels(prog->src, &names);
	for (char *n = names.s, *save = NULL, *t; names.s && (t = strtok_r(n, " ", &save)); n = NULL) {
		puts_(&src, "STANDIN_KERNEL(");
		puts_(&src, t);
		puts_(&src, ")\n");
	}
	free(names.s);
	names = (buf_t){0};
	kernels(prog->src, &names);

	char* ffp = fmad ? "-ffp-contract=fast" : "-ffp-contract=off";
	const char* cxx = getenv("CUDA_STANDIN_CXX");
	if (!cxx || !*cxx) cxx = "g++";
	unsigned long long h = 14695981039346656037ull;
	h = fnv(h, pre, strlen(pre) + 1);
	h = fnv(h, src.s, src.n + 1);
	h = fnv(h, cxx, strlen(cxx) + 1);
	h = fnv(h, ffp, strlen(ffp) + 1);
	for (int i = 0; i < nuser; i++) h = fnv(h, user[i], strlen(user[i]) + 1);
	free(pre);

	char so[4200], cu[4200], tmp[4300], logpath[4300];
	snprintf(so, sizeof so, "%s/%016llx.so", cache, h);
	snprintf(cu, sizeof cu, "%s/%016llx.cu", cache, h);
	snprintf(tmp, sizeof tmp, "%s.%d.tmp", so, (int)getpid());
	snprintf(logpath, sizeof logpath, "%s/%016llx.%d.log", cache, h, (int)getpid());
	nvrtcResult r = NVRTC_SUCCESS;
	if (access(so, R_OK) != 0) {
		FILE* f = fopen(cu, "wb");
		if (!f || fwrite(src.s, 1, src.n, f) != src.n || fclose(f) != 0) {
			setlog(prog, "cuda-standin: cannot write the source to the cache directory\n");
			r = NVRTC_ERROR_INTERNAL_ERROR;
			goto out;
		}
		argv[argc++] = (char*)cxx;
		char* fixed[] = {"-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", ffp, "-fno-math-errno",
			"-include", prelude, "-x", "c++", cu, "-x", "none", "-o", tmp, lib, "-L", dir, "-l:libcuda.so.1", NULL};
		for (char** p = fixed; *p; p++) argv[argc++] = *p;
		for (int i = 0; i < nuser; i++) argv[argc++] = user[i];
		argv[argc] = NULL;
		int st = run(argv, logpath);
		char* log = readfile(logpath);
		unlink(logpath);
		if (st != 0) {
			buf_t l = {0};
			puts_(&l, "cuda-standin: ");
			puts_(&l, cxx);
			puts_(&l, st < 0 ? " could not run\n" : " failed:\n");
			if (log) puts_(&l, log);
			setlog(prog, l.s);
			free(l.s);
			free(log);
			unlink(tmp);
			r = NVRTC_ERROR_COMPILATION;
			goto out;
		}
		setlog(prog, log ? log : "");
		free(log);
		rename(tmp, so); // atomic: concurrent compiles of the same source agree
	} else
		setlog(prog, "");

	// The "PTX": the module path and each kernel's parameters.
	{
		void* m = dlopen(so, RTLD_NOW | RTLD_LOCAL);
		if (!m) {
			setlog(prog, dlerror());
			r = NVRTC_ERROR_INTERNAL_ERROR;
			goto out;
		}
		buf_t ptx = {0};
		char line[4600];
		snprintf(line, sizeof line,
			"//\n// agenttrainer CUDA stand-in (gpu/standin): not PTX. The kernels of %s were\n"
			"// compiled for the CPU; the stand-in cuModuleLoadData loads the module below.\n//\n"
			".version 7.8\n.target %s\n.address_size 64\n.standin_module %s\n",
			prog->name, arch, so);
		puts_(&ptx, line);
		for (char *n = names.s, *save = NULL, *t; names.s && (t = strtok_r(n, " ", &save)); n = NULL) {
			snprintf(line, sizeof line, "__standin_sig_%s", t);
			const char* (*sig)(void) = (const char* (*)(void))dlsym(m, line);
			snprintf(line, sizeof line, "\n.visible .entry %s(\n", t);
			puts_(&ptx, line);
			const char* s = sig ? sig() : "";
			for (int i = 0; *s; i++) {
				size_t k = strcspn(s, " ");
				char ty[8] = {0};
				memcpy(ty, s, k < 7 ? k : 7);
				snprintf(line, sizeof line, "%s\t.param .%s %s_param_%d", i ? ",\n" : "", strcmp(ty, "ptr") ? ty : "u64", t, i);
				puts_(&ptx, line);
				s += k;
				s += *s == ' ';
			}
			puts_(&ptx, "\n)\n");
		}
		dlclose(m);
		free(prog->ptx);
		prog->ptx = ptx.s;
	}
out:
	free(src.s);
	free(names.s);
	free(dir);
	free(cache);
	return r;
}

nvrtcResult nvrtcGetPTXSize(nvrtcProgram p, size_t* n) {
	if (!p) return NVRTC_ERROR_INVALID_PROGRAM;
	if (!p->ptx) return NVRTC_ERROR_INVALID_INPUT;
	*n = strlen(p->ptx) + 1;
	return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetPTX(nvrtcProgram p, char* ptx) {
	if (!p) return NVRTC_ERROR_INVALID_PROGRAM;
	if (!p->ptx) return NVRTC_ERROR_INVALID_INPUT;
	strcpy(ptx, p->ptx);
	return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram p, size_t* n) {
	if (!p) return NVRTC_ERROR_INVALID_PROGRAM;
	*n = strlen(p->log ? p->log : "") + 1;
	return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLog(nvrtcProgram p, char* log) {
	if (!p) return NVRTC_ERROR_INVALID_PROGRAM;
	strcpy(log, p->log ? p->log : "");
	return NVRTC_SUCCESS;
}

// Name expressions: kernels are found by their plain (extern "C") names.
nvrtcResult nvrtcAddNameExpression(nvrtcProgram p, const char* name) { return p && name ? NVRTC_SUCCESS : NVRTC_ERROR_INVALID_INPUT; }
nvrtcResult nvrtcGetLoweredName(nvrtcProgram p, const char* name, const char** lowered) {
	if (!p || !name || !lowered) return NVRTC_ERROR_INVALID_INPUT;
	*lowered = name;
	return NVRTC_SUCCESS;
}
