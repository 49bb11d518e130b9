//go:build cuda

package gpu

import "fmt"

// The CUDA C kernels of the CUDA device, compiled at run time by NVRTC for
// the device's own compute capability (cuda_nvrtc.go) with --fmad=false, so
// that the float32 arithmetic rounds step by step exactly as the Go code of
// cpu.go does.
//
// Conventions:
//   - every kernel parameter is 8 bytes wide (pointers, u64, double):
//     gorgonia.org/cu's Function.Launch copies 8 bytes per parameter;
//   - float32 hyperparameters travel as the double of the float32 value and
//     are narrowed back inside the kernel, where the CPU does float32 math;
//   - every kernel mirrors its counterpart in cpu.go line by line: float64
//     where the CPU computes in float64 (losses, norms, reductions), float32
//     where it computes in float32 (activations, Adam);
//   - reductions are deterministic: a fixed-shape tree inside each block, then
//     the last block to finish (threadfence + ticket) adds the per-block
//     partial sums in block order. Blocks are 256 threads (a multiple of 32).
const cudaKernelSource = `
typedef unsigned long long u64;

#define GRID_STRIDE(i, n) \
	for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (u64)gridDim.x * blockDim.x)

__device__ double nan64() { return __longlong_as_double(0x7ff8000000000000ULL); }

// block_sum returns the sum of v over the block in thread 0 (the other
// threads get partial sums). Every thread of the block must call it.
__device__ double block_sum(double v) {
	__shared__ double sh[32];
	for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
	__syncthreads();
	if (lane == 0) sh[w] = v;
	__syncthreads();
	v = (threadIdx.x < nw) ? sh[threadIdx.x] : 0.0;
	if (w == 0)
		for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
	return v;
}

// is_last_block is true in the block that finishes last; thread 0 of every
// block must have written its partial results before the call. The last
// block resets the counter when done (reset_counter).
__device__ bool is_last_block(unsigned int* counter) {
	__shared__ bool last;
	if (threadIdx.x == 0) {
		__threadfence();
		unsigned int t = atomicInc(counter, gridDim.x);
		last = (t == gridDim.x - 1);
	}
	__syncthreads();
	return last;
}

__device__ double load_partial(const double* p, u64 i) { return ((volatile const double*)p)[i]; }

// tanh32 is cpu.go's tanh32, operation for operation.
__device__ float tanh32(float x) {
	const float clampTo = 7.90531110763549805f;
	if (x > clampTo) x = clampTo;   // comparisons keep NaN as NaN, like Go's min/max
	if (x < -clampTo) x = -clampTo;
	if (fabsf(x) < 0.0004f) return x;
	float x2 = x * x;
	float p = -2.76076847742355e-16f;
	p = p * x2 + 2.00018790482477e-13f;
	p = p * x2 + -8.60467152213735e-11f;
	p = p * x2 + 5.12229709037114e-08f;
	p = p * x2 + 1.48572235717979e-05f;
	p = p * x2 + 6.37261928875436e-04f;
	p = p * x2 + 4.89352455891786e-03f;
	p = p * x;
	float q = 1.19825839466702e-06f;
	q = q * x2 + 1.18534705686654e-04f;
	q = q * x2 + 2.26843463243900e-03f;
	q = q * x2 + 4.89352518554385e-03f;
	return p / q;
}

extern "C" __global__ void fill_f32(float* x, u64 n, double v) {
	float f = (float)v;
	GRID_STRIDE(i, n) x[i] = f;
}

extern "C" __global__ void scale_f32(float* x, u64 n, double s) {
	float f = (float)s;
	GRID_STRIDE(i, n) x[i] = x[i] * f;
}

extern "C" __global__ void bias_act(float* x, const float* b, u64 rows, u64 cols, u64 act) {
	u64 n = rows * cols;
	GRID_STRIDE(i, n) {
		float v = x[i] + b[i % cols];
		if (act == ACT_TANH) v = tanh32(v);
		else if (act == ACT_RELU && v < 0.0f) v = 0.0f;
		x[i] = v;
	}
}

extern "C" __global__ void act_grad(float* g, const float* y, u64 n, u64 act) {
	GRID_STRIDE(i, n) {
		float v = y[i];
		if (act == ACT_TANH) g[i] = g[i] * (1.0f - v * v);
		else if (act == ACT_RELU && v <= 0.0f) g[i] = 0.0f;
	}
}

// colsum: blocks of 32×8 threads; block (bx, by) sums rows
// [by·rowsPerChunk, (by+1)·rowsPerChunk) of columns [32·bx, 32·bx+32).
// With one chunk it finishes out directly; otherwise colsum_final adds the
// chunks' partial sums.
__device__ void colsum_finish(float* out, u64 j, double s, double beta) {
	float ob = out[j] * (float)beta;   // cpu.go: o[j] *= beta, then adds
	out[j] = (float)((double)ob + s);
}

extern "C" __global__ void colsum_partial(const float* x, float* out, double* partial,
		u64 rows, u64 cols, u64 rowsPerChunk, double beta) {
	__shared__ double sh[8][33];
	u64 j = (u64)blockIdx.x * 32 + threadIdx.x;
	u64 r0 = (u64)blockIdx.y * rowsPerChunk;
	u64 r1 = r0 + rowsPerChunk < rows ? r0 + rowsPerChunk : rows;
	double s = 0.0;
	if (j < cols)
		for (u64 r = r0 + threadIdx.y; r < r1; r += 8) s += (double)x[r * cols + j];
	sh[threadIdx.y][threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.y == 0 && j < cols) {
		double t = 0.0;
		for (int k = 0; k < 8; k++) t += sh[k][threadIdx.x];
		if (gridDim.y == 1) colsum_finish(out, j, t, beta);
		else partial[(u64)blockIdx.y * cols + j] = t;
	}
}

extern "C" __global__ void colsum_final(float* out, const double* partial, u64 chunks, u64 cols, double beta) {
	GRID_STRIDE(j, cols) {
		double s = 0.0;
		for (u64 c = 0; c < chunks; c++) s += partial[c * cols + j];
		colsum_finish(out, j, s, beta);
	}
}

extern "C" __global__ void gather_rows(float* dst, const float* src, const int* idx, u64 rows, u64 cols) {
	u64 n = rows * cols;
	GRID_STRIDE(i, n) {
		u64 r = i / cols, j = i - r * cols;
		dst[i] = src[(u64)idx[r] * cols + j];
	}
}

// im2col: one thread per patch element (conv.go's layout): row r =
// (b, oy, ox), column j = (ky·K + kx)·C + c, zero in the padding.
extern "C" __global__ void im2col(float* cols, const float* x, u64 B, u64 H, u64 W, u64 C,
		u64 K, u64 S, u64 P, u64 OH, u64 OW) {
	u64 patch = K * K * C, n = B * OH * OW * patch;
	GRID_STRIDE(i, n) {
		u64 r = i / patch, j = i - r * patch;
		u64 b = r / (OH * OW), p = r - b * (OH * OW);
		u64 oy = p / OW, ox = p - oy * OW;
		u64 kk = j / C, c = j - kk * C, ky = kk / K, kx = kk - ky * K;
		long long iy = (long long)(oy * S + ky) - (long long)P;
		long long ix = (long long)(ox * S + kx) - (long long)P;
		float v = 0.0f;
		if (iy >= 0 && iy < (long long)H && ix >= 0 && ix < (long long)W)
			v = x[((b * H + (u64)iy) * W + (u64)ix) * C + c];
		cols[i] = v;
	}
}

// col2im: one thread per pixel, gathering the patch elements read from it
// (no atomics). cpu.go adds patch rows in order (oy, ox ascending), which
// for one pixel is ky then kx descending: the same float32 sum, bit for bit.
extern "C" __global__ void col2im(float* dx, const float* cols, u64 B, u64 H, u64 W, u64 C,
		u64 K, u64 S, u64 P, u64 OH, u64 OW) {
	u64 patch = K * K * C, n = B * H * W * C;
	GRID_STRIDE(i, n) {
		u64 c = i % C, t = i / C;
		u64 ix = t % W;
		t /= W;
		u64 iy = t % H, b = t / H;
		float s = 0.0f;
		for (long long ky = (long long)K - 1; ky >= 0; ky--) {
			long long ny = (long long)(iy + P) - ky;
			if (ny < 0 || ny % (long long)S != 0 || ny / (long long)S >= (long long)OH) continue;
			u64 oy = (u64)(ny / (long long)S);
			for (long long kx = (long long)K - 1; kx >= 0; kx--) {
				long long nx = (long long)(ix + P) - kx;
				if (nx < 0 || nx % (long long)S != 0 || nx / (long long)S >= (long long)OW) continue;
				u64 ox = (u64)(nx / (long long)S);
				s += cols[((b * OH + oy) * OW + ox) * patch + ((u64)ky * K + (u64)kx) * C + c];
			}
		}
		dx[i] = s;
	}
}

// Advantage normalisation (cpu.go normalizedAdv): mean, and 1/(std+1e-8)
// with Bessel's correction, computed by one block.
__device__ void block_adv_stats(const float* adv, u64 B, double* mean, double* inv) {
	__shared__ double m_sh, inv_sh;
	double s = 0.0;
	for (u64 i = threadIdx.x; i < B; i += blockDim.x) s += (double)adv[i];
	s = block_sum(s);
	if (threadIdx.x == 0) m_sh = s / (double)B;
	__syncthreads();
	double m = m_sh, ss = 0.0;
	for (u64 i = threadIdx.x; i < B; i += blockDim.x) {
		double d = (double)adv[i] - m;
		ss += d * d;
	}
	ss = block_sum(ss);
	if (threadIdx.x == 0) {
		double sd = B > 1 ? sqrt(ss / (double)(B - 1)) : 0.0;
		inv_sh = 1.0 / (sd + 1e-8);
	}
	__syncthreads();
	*mean = m;
	*inv = inv_sh;
}

extern "C" __global__ void adv_stats(const float* adv, u64 B, double* out) {
	double m, inv;
	block_adv_stats(adv, B, &m, &inv);
	if (threadIdx.x == 0) { out[0] = m; out[1] = inv; }
}

// advMode: ADV_RAW (no normalisation), ADV_BLOCK (this single block computes
// the statistics), ADV_PRECOMPUTED (adv_stats wrote them to advStats).
__device__ void adv_norm(const float* adv, u64 B, u64 mode, const double* advStats, double* mean, double* inv) {
	if (mode == ADV_BLOCK) { block_adv_stats(adv, B, mean, inv); return; }
	if (mode == ADV_PRECOMPUTED) { *mean = advStats[0]; *inv = advStats[1]; return; }
	*mean = 0.0; *inv = 1.0;
}

// surrogate is cpu.go's surrogate.
__device__ void surrogate(double adv, double ratio, double clip, double* loss, double* dlogp) {
	double pg1 = -adv * ratio;
	double pg2 = -adv * fmin(fmax(ratio, 1.0 - clip), 1.0 + clip);
	if (pg1 >= pg2) { *loss = pg1; *dlogp = pg1; }
	else { *loss = pg2; *dlogp = 0.0; }
}

extern "C" __global__ void categorical_ppo(const float* logits, const float* acts, const float* old,
		const float* adv, float* dout, float* stats, double* partial, unsigned int* counter,
		const double* advStats, u64 B, u64 A, double clip, double ent, u64 advMode) {
	double mean, inv;
	adv_norm(adv, B, advMode, advStats, &mean, &inv);
	double invB = 1.0 / (double)B;
	double sPG = 0.0, sEnt = 0.0, sKL = 0.0, sClip = 0.0;
	GRID_STRIDE(i, B) {
		const float* row = logits + i * A;
		float* g = dout + i * A;
		double mx = (double)row[0];
		for (u64 j = 0; j < A; j++) mx = fmax(mx, (double)row[j]);
		double se = 0.0;
		for (u64 j = 0; j < A; j++) se += exp((double)row[j] - mx);
		double lse = mx + log(se);
		double h = 0.0;
		for (u64 j = 0; j < A; j++) {
			double lp = (double)row[j] - lse;
			h -= exp(lp) * lp;
		}
		long long a = (long long)acts[i];
		if (a < 0 || a >= (long long)A) {   // the CPU device panics here
			sPG = nan64();
			continue;
		}
		double logRatio = (double)row[a] - lse - (double)old[i];
		double ratio = exp(logRatio);
		double pg, dLogp;
		surrogate(((double)adv[i] - mean) * inv, ratio, clip, &pg, &dLogp);
		for (u64 j = 0; j < A; j++) {
			double lp = (double)row[j] - lse;
			double pj = exp(lp);
			double gj = -dLogp * pj + ent * pj * (lp + h);
			if ((long long)j == a) gj += dLogp;
			g[j] = (float)(gj * invB);
		}
		sPG += pg;
		sEnt += h;
		sKL += (ratio - 1.0) - logRatio;
		if (fabs(ratio - 1.0) > clip) sClip += 1.0;
	}
	sPG = block_sum(sPG);
	sEnt = block_sum(sEnt);
	sKL = block_sum(sKL);
	sClip = block_sum(sClip);
	if (threadIdx.x == 0) {
		double* p = partial + 4 * (u64)blockIdx.x;
		p[0] = sPG; p[1] = sEnt; p[2] = sKL; p[3] = sClip;
	}
	bool last = is_last_block(counter);
	if (last && threadIdx.x == 0) {
		double t[4] = {0.0, 0.0, 0.0, 0.0};
		for (u64 b = 0; b < gridDim.x; b++)
			for (int k = 0; k < 4; k++) t[k] += load_partial(partial, 4 * b + k);
		stats[STAT_POLICY_LOSS] += (float)(t[0] * invB);
		stats[STAT_ENTROPY] += (float)(t[1] * invB);
		stats[STAT_APPROX_KL] += (float)(t[2] * invB);
		stats[STAT_CLIP_FRAC] += (float)(t[3] * invB);
		*counter = 0;
	}
}

extern "C" __global__ void gaussian_ppo(const float* mu, const float* logStd, const float* acts,
		const float* old, const float* adv, float* dmu, float* dlogstd, float* stats, double* partial,
		unsigned int* counter, const double* advStats, u64 B, u64 A, double clip, double entCoef, u64 advMode) {
	double mean, inv;
	adv_norm(adv, B, advMode, advStats, &mean, &inv);
	double invB = 1.0 / (double)B;
	double acc[MAX_GAUSSIAN_DIMS];
	for (u64 j = 0; j < A; j++) acc[j] = 0.0;
	double sPG = 0.0, sKL = 0.0, sClip = 0.0;
	GRID_STRIDE(i, B) {
		const float* m = mu + i * A;
		const float* act = acts + i * A;
		double logp = 0.0;
		for (u64 j = 0; j < A; j++) {
			double z = ((double)act[j] - (double)m[j]) / exp((double)logStd[j]);
			logp += -0.5 * z * z - (double)logStd[j] - HALF_LOG_2PI;
		}
		double logRatio = logp - (double)old[i];
		double ratio = exp(logRatio);
		double pg, dLogp;
		surrogate(((double)adv[i] - mean) * inv, ratio, clip, &pg, &dLogp);
		for (u64 j = 0; j < A; j++) {
			double sd = exp((double)logStd[j]);
			double diff = (double)act[j] - (double)m[j];
			dmu[i * A + j] = (float)(dLogp * diff / (sd * sd) * invB);
			double z = diff / sd;
			acc[j] += (double)(float)(dLogp * (z * z - 1.0) * invB);   // cpu.go adds float32 terms
		}
		sPG += pg;
		sKL += (ratio - 1.0) - logRatio;
		if (fabs(ratio - 1.0) > clip) sClip += 1.0;
	}
	u64 stride = 3 + A;
	sPG = block_sum(sPG);
	sKL = block_sum(sKL);
	sClip = block_sum(sClip);
	double* p = partial + stride * (u64)blockIdx.x;
	if (threadIdx.x == 0) { p[0] = sPG; p[1] = sKL; p[2] = sClip; }
	for (u64 j = 0; j < A; j++) {
		double s = block_sum(acc[j]);
		if (threadIdx.x == 0) p[3 + j] = s;
	}
	bool last = is_last_block(counter);
	if (last && threadIdx.x == 0) {
		double t[3] = {0.0, 0.0, 0.0};
		for (u64 b = 0; b < gridDim.x; b++)
			for (int k = 0; k < 3; k++) t[k] += load_partial(partial, stride * b + k);
		double h = 0.0;   // the entropy is the same for every sample
		for (u64 j = 0; j < A; j++) h += HALF_PLUS_HALF_LOG_2PI + (double)logStd[j];
		for (u64 j = 0; j < A; j++) {
			double s = 0.0;
			for (u64 b = 0; b < gridDim.x; b++) s += load_partial(partial, stride * b + 3 + j);
			dlogstd[j] = (float)s - (float)entCoef;
		}
		stats[STAT_POLICY_LOSS] += (float)(t[0] * invB);
		stats[STAT_ENTROPY] += (float)(h * (double)B * invB);
		stats[STAT_APPROX_KL] += (float)(t[1] * invB);
		stats[STAT_CLIP_FRAC] += (float)(t[2] * invB);
		*counter = 0;
	}
}

extern "C" __global__ void value_loss(const float* v, const float* old, const float* ret, float* dv,
		float* stats, double* partial, unsigned int* counter, u64 B, double c, u64 clip, double scale) {
	double sum = 0.0;
	GRID_STRIDE(i, B) {
		double diff = (double)v[i] - (double)ret[i];
		double loss = diff * diff;
		double grad = diff;
		if (clip) {
			double vc = (double)old[i] + fmin(fmax((double)v[i] - (double)old[i], -c), c);
			double lc = (vc - (double)ret[i]) * (vc - (double)ret[i]);
			if (lc > loss) { loss = lc; grad = 0.0; }
		}
		sum += loss;
		dv[i] = (float)(grad * scale);
	}
	sum = block_sum(sum);
	if (threadIdx.x == 0) partial[blockIdx.x] = sum;
	bool last = is_last_block(counter);
	if (last && threadIdx.x == 0) {
		double t = 0.0;
		for (u64 b = 0; b < gridDim.x; b++) t += load_partial(partial, b);
		stats[STAT_VALUE_LOSS] += (float)(0.5 * t / (double)B);
		*counter = 0;
	}
}

// grad_norm adds the L2 norm of g to the stats and leaves clip_grad_norm_'s
// coefficient maxNorm/(norm+1e-6) in coef[0]; scale_grads applies it.
extern "C" __global__ void grad_norm(const float* g, u64 n, float* stats, double* partial,
		unsigned int* counter, double maxNorm, double* coef) {
	double s = 0.0;
	GRID_STRIDE(i, n) {
		double x = (double)g[i];
		s += x * x;
	}
	s = block_sum(s);
	if (threadIdx.x == 0) partial[blockIdx.x] = s;
	bool last = is_last_block(counter);
	if (last && threadIdx.x == 0) {
		double t = 0.0;
		for (u64 b = 0; b < gridDim.x; b++) t += load_partial(partial, b);
		double norm = sqrt(t);
		stats[STAT_GRAD_NORM] += (float)norm;
		coef[0] = maxNorm / (norm + 1e-6);
		*counter = 0;
	}
}

extern "C" __global__ void scale_grads(float* g, u64 n, const double* coef) {
	double c = coef[0];
	if (!(c < 1.0)) return;   // cpu.go scales only when coef < 1
	float f = (float)c;
	GRID_STRIDE(i, n) g[i] = g[i] * f;
}

extern "C" __global__ void adam(float* p, const float* g, float* m, float* v, u64 n,
		double stepSize, double invSqrtBC2, double beta1, double beta2, double epsilon) {
	float ss = (float)stepSize, ib = (float)invSqrtBC2;
	float b1 = (float)beta1, b2 = (float)beta2, eps = (float)epsilon;
	GRID_STRIDE(i, n) {
		float gi = g[i];
		float mi = b1 * m[i] + (1.0f - b1) * gi;
		float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
		m[i] = mi;
		v[i] = vi;
		p[i] = p[i] - ss * mi / (sqrtf(vi) * ib + eps);
	}
}
`

// Kernel launch shapes and limits shared by the Go side and the source.
const (
	blockThreads    = 256  // threads per block of every 1-D kernel
	maxGrid         = 4096 // blocks of an elementwise grid-stride kernel
	maxReduceBlocks = 1024 // blocks of a reduction (sizes the partials buffer)
	singleBlockMax  = 2048 // losses over at most this many samples run as one block
	colsumChunkRows = 1024 // rows a colsum block sums before a second pass adds chunks
	maxColsumChunks = 1024

	// MaxGaussianDims is the largest action dimension GaussianPPO supports
	// on the CUDA device (the kernel keeps per-dimension sums in registers).
	MaxGaussianDims = 64

	advRaw         = 0
	advBlock       = 1
	advPrecomputed = 2
)

// cudaSource is the kernel source with the constants it shares with Go.
func cudaSource() string {
	return fmt.Sprintf(`#define ACT_TANH %dULL
#define ACT_RELU %dULL
#define STAT_POLICY_LOSS %d
#define STAT_VALUE_LOSS %d
#define STAT_ENTROPY %d
#define STAT_APPROX_KL %d
#define STAT_CLIP_FRAC %d
#define STAT_GRAD_NORM %d
#define MAX_GAUSSIAN_DIMS %d
#define ADV_BLOCK %dULL
#define ADV_PRECOMPUTED %dULL
#define HALF_LOG_2PI %.17g
#define HALF_PLUS_HALF_LOG_2PI %.17g
`, Tanh, ReLU, StatPolicyLoss, StatValueLoss, StatEntropy, StatApproxKL, StatClipFrac, StatGradNorm,
		MaxGaussianDims, advBlock, advPrecomputed, halfLog2Pi, 0.5+halfLog2Pi) + cudaKernelSource
}

// kernelNames lists every kernel the device loads.
var kernelNames = []string{
	"fill_f32", "scale_f32", "bias_act", "act_grad", "colsum_partial", "colsum_final", "gather_rows",
	"im2col", "col2im",
	"adv_stats", "categorical_ppo", "gaussian_ppo", "value_loss", "grad_norm", "scale_grads", "adam",
}
