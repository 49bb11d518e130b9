//go:build cuda

package gpu

// lmKernelSource is the CUDA C of the transformer ops (TransformerOps on
// the CUDA device), a module of its own compiled by NVRTC on first use
// (lm_cuda.go). The conventions of cuda_kernels.go hold: every parameter 8
// bytes wide (pointers, u64, double), float32 values travel as doubles,
// blocks of 128 threads (a multiple of 32), and every result is computed
// in a fixed order (no atomics), so that runs repeat bit for bit.
// Reductions inside a block go through lm_block_sum/lm_block_max; sums
// over rows (the norm weights' gradients) through per-chunk partial sums
// added in order.
const lmKernelSource = `
typedef unsigned long long u64;

#define LM_BLOCK 128
#define LM_CHUNK 512   /* keys whose scores a block holds at once */
#define LM_MAX_HD 512  /* the widest head the attention kernels take */
/* NVRTC has no math.h, so no INFINITY: -inf from its bits. */
#define LM_NEG_INF __int_as_float(0xff800000)

#define GRID_STRIDE(i, n) \
	for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (u64)gridDim.x * blockDim.x)
#define BLOCK_STRIDE(b, n) for (u64 b = blockIdx.x; b < (n); b += gridDim.x)

__device__ float lm_warp_sum(float v) {
	for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
	return v;
}

__device__ float lm_warp_max(float v) {
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
	return v;
}

// lm_block_sum returns the sum of v over the block to every thread; every
// thread of the block must call it.
__device__ float lm_block_sum(float v) {
	__shared__ float sh[32];
	__shared__ float result;
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
	v = lm_warp_sum(v);
	__syncthreads();
	if (lane == 0) sh[w] = v;
	__syncthreads();
	if (w == 0) {
		v = lane < nw ? sh[lane] : 0.0f;
		v = lm_warp_sum(v);
		if (lane == 0) result = v;
	}
	__syncthreads();
	return result;
}

__device__ float lm_block_max(float v) {
	__shared__ float sh[32];
	__shared__ float result;
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
	v = lm_warp_max(v);
	__syncthreads();
	if (lane == 0) sh[w] = v;
	__syncthreads();
	if (w == 0) {
		v = lane < nw ? sh[lane] : LM_NEG_INF;
		v = lm_warp_max(v);
		if (lane == 0) result = v;
	}
	__syncthreads();
	return result;
}

extern "C" __global__ void lm_add(float* dst, const float* src, u64 n) {
	GRID_STRIDE(i, n) dst[i] = dst[i] + src[i];
}

extern "C" __global__ void lm_embed(float* out, const float* table, const int* ids, u64 n, u64 h, u64 v, u64 transposed) {
	GRID_STRIDE(e, n * h) {
		u64 i = e / h, j = e % h, id = (u64)ids[i];
		out[e] = transposed ? table[j * v + id] : table[id * h + j];
	}
}

// One thread per hidden column, the rows in order: no two threads write
// one value, and each sum runs as the CPU's does.
extern "C" __global__ void lm_embed_grad(float* dt, const float* dout, const int* ids, u64 n, u64 h, u64 v, u64 transposed) {
	GRID_STRIDE(j, h) {
		for (u64 i = 0; i < n; i++) {
			u64 id = (u64)ids[i];
			u64 at = transposed ? j * v + id : id * h + j;
			dt[at] = dt[at] + dout[i * h + j];
		}
	}
}

// lm_rmsnorm: one block per (row, group).
extern "C" __global__ void lm_rmsnorm(const float* x, float* y, const float* w, float* rstd,
		u64 n, u64 c, u64 col, u64 groups, u64 width, double eps) {
	BLOCK_STRIDE(b, n * groups) {
		u64 row = b / groups, g = b % groups, off = row * c + col + g * width;
		float ss = 0.0f;
		for (u64 j = threadIdx.x; j < width; j += blockDim.x) ss += x[off + j] * x[off + j];
		ss = lm_block_sum(ss);
		float r = 1.0f / sqrtf(ss / (float)width + (float)eps);
		if (threadIdx.x == 0) rstd[b] = r;
		for (u64 j = threadIdx.x; j < width; j += blockDim.x) y[off + j] = x[off + j] * r * w[j];
		__syncthreads();
	}
}

// lm_rmsnorm_dx: one block per (row, group); dx may be dy (each thread
// reads and writes only its own columns, after the block's sum).
extern "C" __global__ void lm_rmsnorm_dx(const float* x, const float* w, const float* rstd, const float* dy, float* dx,
		u64 n, u64 c, u64 col, u64 groups, u64 width, u64 add) {
	BLOCK_STRIDE(b, n * groups) {
		u64 row = b / groups, g = b % groups, off = row * c + col + g * width;
		float r = rstd[b], s = 0.0f;
		for (u64 j = threadIdx.x; j < width; j += blockDim.x) s += dy[off + j] * w[j] * x[off + j];
		s = lm_block_sum(s);
		float k = s * r * r / (float)width;
		for (u64 j = threadIdx.x; j < width; j += blockDim.x) {
			float v = r * (dy[off + j] * w[j] - x[off + j] * k);
			dx[off + j] = add ? dx[off + j] + v : v;
		}
		__syncthreads();
	}
}

// lm_rmsnorm_dw_partial: blocks of 32×8 threads; block (bx, by) sums the
// items (row, group) of chunk by for columns [32·bx, 32·bx+32).
extern "C" __global__ void lm_rmsnorm_dw_partial(const float* x, const float* dy, const float* rstd, double* partial,
		u64 n, u64 c, u64 col, u64 groups, u64 width, u64 perChunk) {
	__shared__ double sh[8][33];
	u64 j = (u64)blockIdx.x * 32 + threadIdx.x;
	u64 i0 = (u64)blockIdx.y * perChunk, items = n * groups;
	u64 i1 = i0 + perChunk < items ? i0 + perChunk : items;
	double s = 0.0;
	if (j < width)
		for (u64 it = i0 + threadIdx.y; it < i1; it += 8) {
			u64 row = it / groups, g = it % groups, at = row * c + col + g * width + j;
			s += (double)(dy[at] * x[at] * rstd[it]);
		}
	sh[threadIdx.y][threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.y == 0 && j < width) {
		double t = 0.0;
		for (int k = 0; k < 8; k++) t += sh[k][threadIdx.x];
		partial[(u64)blockIdx.y * width + j] = t;
	}
}

extern "C" __global__ void lm_rmsnorm_dw_final(float* dw, const double* partial, u64 chunks, u64 width) {
	GRID_STRIDE(j, width) {
		double t = 0.0;
		for (u64 k = 0; k < chunks; k++) t += partial[k * width + j];
		dw[j] = (float)((double)dw[j] + t);
	}
}

extern "C" __global__ void lm_rope(float* x, const float* cs, const float* sn, const int* pos,
		u64 n, u64 c, u64 col, u64 heads, u64 hd, u64 inverse) {
	u64 half = hd / 2;
	GRID_STRIDE(e, n * heads * half) {
		u64 i = e / (heads * half), h = (e / half) % heads, j = e % half;
		u64 p = (u64)pos[i], off = i * c + col + h * hd;
		float co = cs[p * half + j], si = sn[p * half + j];
		float u = x[off + j], v = x[off + half + j];
		if (inverse) {
			x[off + j] = u * co + v * si;
			x[off + half + j] = v * co - u * si;
		} else {
			x[off + j] = u * co - v * si;
			x[off + half + j] = v * co + u * si;
		}
	}
}

extern "C" __global__ void lm_swiglu(float* h, const float* gu, u64 n, u64 w) {
	GRID_STRIDE(e, n * w) {
		u64 i = e / w, j = e % w;
		float g = gu[i * 2 * w + j], u = gu[i * 2 * w + w + j];
		h[e] = g / (1.0f + expf(-g)) * u;
	}
}

extern "C" __global__ void lm_swiglu_grad(float* dgu, const float* dh, const float* gu, u64 n, u64 w) {
	GRID_STRIDE(e, n * w) {
		u64 i = e / w, j = e % w;
		float g = gu[i * 2 * w + j], u = gu[i * 2 * w + w + j];
		float s = 1.0f / (1.0f + expf(-g));
		dgu[i * 2 * w + j] = dh[e] * u * s * (1.0f + g * (1.0f - s));
		dgu[i * 2 * w + w + j] = dh[e] * g * s;
	}
}

// lm_attend is one query's attention over keys 0…last, for a block:
// key j's component d at k[j·kj + d·kd], value component d at
// v[j·vj + d], keys whose mask entry is 0 skipped (mask may be null). It
// keeps a running maximum and sum over chunks of LM_CHUNK keys (the
// online softmax), each thread the output components d ≡ threadIdx.x
// (mod blockDim.x), and writes out (normalised) and the log-sum-exp.
__device__ void lm_attend(const float* q, u64 hd, float scale, const float* k, u64 kj, u64 kd,
		const float* v, u64 vj, const int* mask, u64 last, float* out, float* lse) {
	__shared__ float qs[LM_MAX_HD];
	__shared__ float s[LM_CHUNK];
	float acc[LM_MAX_HD / LM_BLOCK];
	int per = (int)((hd + blockDim.x - 1) / blockDim.x);
	for (int t = 0; t < per; t++) acc[t] = 0.0f;
	for (u64 d = threadIdx.x; d < hd; d += blockDim.x) qs[d] = q[d];
	__syncthreads();
	float m = LM_NEG_INF, l = 0.0f;
	for (u64 c0 = 0; c0 <= last; c0 += LM_CHUNK) {
		u64 c1 = c0 + LM_CHUNK <= last + 1 ? c0 + LM_CHUNK : last + 1;
		float cm = LM_NEG_INF;
		for (u64 j = c0 + threadIdx.x; j < c1; j += blockDim.x) {
			float sc = LM_NEG_INF;
			if (!mask || mask[j]) {
				float dot = 0.0f;
				for (u64 d = 0; d < hd; d++) dot += qs[d] * k[j * kj + d * kd];
				sc = dot * scale;
			}
			s[j - c0] = sc;
			cm = fmaxf(cm, sc);
		}
		cm = lm_block_max(cm);
		float nm = fmaxf(m, cm);
		float alpha = (m == LM_NEG_INF) ? 0.0f : expf(m - nm);
		float ps = 0.0f;
		for (u64 j = c0 + threadIdx.x; j < c1; j += blockDim.x) {
			float p = (s[j - c0] == LM_NEG_INF) ? 0.0f : expf(s[j - c0] - nm);
			s[j - c0] = p;
			ps += p;
		}
		ps = lm_block_sum(ps); /* its barriers also publish s */
		l = l * alpha + ps;
		for (int t = 0; t < per; t++) {
			u64 d = threadIdx.x + (u64)t * blockDim.x;
			if (d >= hd) break;
			float a = acc[t] * alpha;
			for (u64 j = c0; j < c1; j++) a += s[j - c0] * v[j * vj + d];
			acc[t] = a;
		}
		m = nm;
		__syncthreads();
	}
	float inv = 1.0f / l;
	for (int t = 0; t < per; t++) {
		u64 d = threadIdx.x + (u64)t * blockDim.x;
		if (d < hd) out[d] = acc[t] * inv;
	}
	if (threadIdx.x == 0 && lse) *lse = m + logf(l);
	__syncthreads();
}

// lm_attn_fwd: one block per (row, query head) of a padded batch.
extern "C" __global__ void lm_attn_fwd(const float* qkv, float* out, float* lse, const int* mask,
		u64 batch, u64 seq, u64 heads, u64 kvh, u64 hd, double scale) {
	u64 w = (heads + 2 * kvh) * hd;
	BLOCK_STRIDE(b, batch * seq * heads) {
		u64 row = b / heads, h = b % heads, s0 = row - row % seq, i = row % seq, g = h * kvh / heads;
		float* o = out + row * heads * hd + h * hd;
		if (mask && !mask[row]) {
			for (u64 d = threadIdx.x; d < hd; d += blockDim.x) o[d] = 0.0f;
			if (threadIdx.x == 0) lse[b] = 0.0f;
			__syncthreads();
			continue;
		}
		lm_attend(qkv + row * w + h * hd, hd, (float)scale, qkv + s0 * w + (heads + g) * hd, w, 1,
			qkv + s0 * w + (heads + kvh + g) * hd, w, mask ? mask + s0 : 0, i, o, lse + b);
	}
}

// lm_attn_delta: D = Σ dO·O per (row, head), the softmax backward's row term.
extern "C" __global__ void lm_attn_delta(const float* out, const float* dout, float* delta, u64 n, u64 heads, u64 hd) {
	GRID_STRIDE(b, n * heads) {
		float s = 0.0f;
		for (u64 d = 0; d < hd; d++) s += dout[b * hd + d] * out[b * hd + d];
		delta[b] = s;
	}
}

// lm_attn_bwd_q: one block per (row, query head): dQ = Σ_j dS_j·k_j with
// dS_j = p_j·(dO·v_j − D)·scale, the probabilities computed again from the
// saved log-sum-exp.
extern "C" __global__ void lm_attn_bwd_q(const float* qkv, const float* lse, const float* delta, const float* dout,
		float* dqkv, const int* mask, u64 batch, u64 seq, u64 heads, u64 kvh, u64 hd, double scale) {
	__shared__ float qs[LM_MAX_HD];
	__shared__ float dos[LM_MAX_HD];
	__shared__ float ds[LM_CHUNK];
	u64 w = (heads + 2 * kvh) * hd;
	float sc = (float)scale;
	BLOCK_STRIDE(b, batch * seq * heads) {
		u64 row = b / heads, h = b % heads, s0 = row - row % seq, i = row % seq, g = h * kvh / heads;
		float* dq = dqkv + row * w + h * hd;
		if (mask && !mask[row]) {
			for (u64 d = threadIdx.x; d < hd; d += blockDim.x) dq[d] = 0.0f;
			__syncthreads();
			continue;
		}
		const float* k = qkv + s0 * w + (heads + g) * hd;
		const float* v = qkv + s0 * w + (heads + kvh + g) * hd;
		for (u64 d = threadIdx.x; d < hd; d += blockDim.x) {
			qs[d] = qkv[row * w + h * hd + d];
			dos[d] = dout[row * heads * hd + h * hd + d];
		}
		__syncthreads();
		float l = lse[b], D = delta[b];
		float acc[LM_MAX_HD / LM_BLOCK];
		int per = (int)((hd + blockDim.x - 1) / blockDim.x);
		for (int t = 0; t < per; t++) acc[t] = 0.0f;
		for (u64 c0 = 0; c0 <= i; c0 += LM_CHUNK) {
			u64 c1 = c0 + LM_CHUNK <= i + 1 ? c0 + LM_CHUNK : i + 1;
			for (u64 j = c0 + threadIdx.x; j < c1; j += blockDim.x) {
				float val = 0.0f;
				if (!mask || mask[s0 + j]) {
					float qk = 0.0f, dv = 0.0f;
					for (u64 d = 0; d < hd; d++) {
						qk += qs[d] * k[j * w + d];
						dv += dos[d] * v[j * w + d];
					}
					float p = expf(qk * sc - l);
					val = p * (dv - D) * sc;
				}
				ds[j - c0] = val;
			}
			__syncthreads();
			for (int t = 0; t < per; t++) {
				u64 d = threadIdx.x + (u64)t * blockDim.x;
				if (d >= hd) break;
				float a = acc[t];
				for (u64 j = c0; j < c1; j++) a += ds[j - c0] * k[j * w + d];
				acc[t] = a;
			}
			__syncthreads();
		}
		for (int t = 0; t < per; t++) {
			u64 d = threadIdx.x + (u64)t * blockDim.x;
			if (d < hd) dq[d] = acc[t];
		}
		__syncthreads();
	}
}

// lm_attn_bwd_kv: one block per (row, key/value head): the key's and
// value's gradients summed over every later query of its sequence and
// every query head of its group, LM_BLOCK (query, head) pairs at a time:
// each thread one pair's probability and score gradient, then each
// thread its components of the sums, pairs in order.
extern "C" __global__ void lm_attn_bwd_kv(const float* qkv, const float* lse, const float* delta, const float* dout,
		float* dqkv, const int* mask, u64 batch, u64 seq, u64 heads, u64 kvh, u64 hd, double scale) {
	__shared__ float ks[LM_MAX_HD];
	__shared__ float vs[LM_MAX_HD];
	__shared__ float ps[LM_BLOCK];
	__shared__ float dss[LM_BLOCK];
	u64 w = (heads + 2 * kvh) * hd, group = heads / kvh;
	float sc = (float)scale;
	BLOCK_STRIDE(b, batch * seq * kvh) {
		u64 row = b / kvh, g = b % kvh, s0 = row - row % seq, j = row % seq;
		float* dk = dqkv + row * w + (heads + g) * hd;
		float* dv = dqkv + row * w + (heads + kvh + g) * hd;
		if (mask && !mask[row]) {
			for (u64 d = threadIdx.x; d < hd; d += blockDim.x) dk[d] = dv[d] = 0.0f;
			__syncthreads();
			continue;
		}
		for (u64 d = threadIdx.x; d < hd; d += blockDim.x) {
			ks[d] = qkv[row * w + (heads + g) * hd + d];
			vs[d] = qkv[row * w + (heads + kvh + g) * hd + d];
		}
		__syncthreads();
		float ak[LM_MAX_HD / LM_BLOCK], av[LM_MAX_HD / LM_BLOCK];
		int per = (int)((hd + blockDim.x - 1) / blockDim.x);
		for (int t = 0; t < per; t++) ak[t] = av[t] = 0.0f;
		u64 pairs = (seq - j) * group; /* queries i ≥ j, heads of the group */
		for (u64 c0 = 0; c0 < pairs; c0 += LM_BLOCK) {
			u64 c1 = c0 + LM_BLOCK < pairs ? c0 + LM_BLOCK : pairs;
			u64 pr = c0 + threadIdx.x;
			if (pr < c1) {
				u64 i = j + pr / group, h = g * group + pr % group, qr = s0 + i;
				float p = 0.0f, dsv = 0.0f;
				if (!mask || mask[qr]) {
					float qk = 0.0f, dov = 0.0f;
					for (u64 d = 0; d < hd; d++) {
						qk += qkv[qr * w + h * hd + d] * ks[d];
						dov += dout[qr * heads * hd + h * hd + d] * vs[d];
					}
					p = expf(qk * sc - lse[qr * heads + h]);
					dsv = p * (dov - delta[qr * heads + h]) * sc;
				}
				ps[threadIdx.x] = p;
				dss[threadIdx.x] = dsv;
			}
			__syncthreads();
			for (int t = 0; t < per; t++) {
				u64 d = threadIdx.x + (u64)t * blockDim.x;
				if (d >= hd) break;
				float a = ak[t], bv = av[t];
				for (u64 q = c0; q < c1; q++) {
					u64 i = j + q / group, h = g * group + q % group, qr = s0 + i;
					a += dss[q - c0] * qkv[qr * w + h * hd + d];
					bv += ps[q - c0] * dout[qr * heads * hd + h * hd + d];
				}
				ak[t] = a;
				av[t] = bv;
			}
			__syncthreads();
		}
		for (int t = 0; t < per; t++) {
			u64 d = threadIdx.x + (u64)t * blockDim.x;
			if (d < hd) {
				dk[d] = ak[t];
				dv[d] = av[t];
			}
		}
		__syncthreads();
	}
}

// lm_cache_store writes new keys (transposed) and values into a layer's caches.
extern "C" __global__ void lm_cache_store(const float* qkv, float* kc, float* vc, const int* slot, const int* pos,
		u64 n, u64 heads, u64 kvh, u64 hd, u64 maxlen) {
	u64 kvw = kvh * hd, w = (heads + 2 * kvh) * hd;
	GRID_STRIDE(e, n * kvw) {
		u64 i = e / kvw, c = e % kvw, s = (u64)slot[i], p = (u64)pos[i];
		kc[(s * kvw + c) * maxlen + p] = qkv[i * w + heads * hd + c];
		vc[(s * maxlen + p) * kvw + c] = qkv[i * w + (heads + kvh) * hd + c];
	}
}

// lm_cache_attn: one block per (new token, query head).
extern "C" __global__ void lm_cache_attn(const float* qkv, float* out, const float* kc, const float* vc,
		const int* slot, const int* pos, u64 n, u64 heads, u64 kvh, u64 hd, u64 maxlen, double scale) {
	u64 kvw = kvh * hd, w = (heads + 2 * kvh) * hd;
	BLOCK_STRIDE(b, n * heads) {
		u64 i = b / heads, h = b % heads, g = h * kvh / heads, s = (u64)slot[i];
		lm_attend(qkv + i * w + h * hd, hd, (float)scale, kc + (s * kvw + g * hd) * maxlen, 1, maxlen,
			vc + s * maxlen * kvw + g * hd, kvw, 0, (u64)pos[i], out + i * heads * hd + h * hd, 0);
	}
}

// lm_logprobs: one block per row.
extern "C" __global__ void lm_logprobs(const float* z, const int* tgt, float* lp, float* ent, u64 m, u64 v, double invT) {
	float t = (float)invT;
	BLOCK_STRIDE(i, m) {
		const float* row = z + i * v;
		float mx = LM_NEG_INF;
		for (u64 j = threadIdx.x; j < v; j += blockDim.x) mx = fmaxf(mx, row[j] * t);
		mx = lm_block_max(mx);
		float s = 0.0f, sz = 0.0f;
		for (u64 j = threadIdx.x; j < v; j += blockDim.x) {
			float e = expf(row[j] * t - mx);
			s += e;
			sz += e * (row[j] * t - mx);
		}
		s = lm_block_sum(s);
		if (ent) sz = lm_block_sum(sz);
		if (threadIdx.x == 0) {
			float ls = logf(s);
			lp[i] = row[tgt[i]] * t - (mx + ls);
			if (ent) ent[i] = ls - sz / s;
		}
		__syncthreads();
	}
}

// lm_logprobs_grad: one block per row, the logits overwritten by their
// gradient (each thread its own columns, after the block's sums).
extern "C" __global__ void lm_logprobs_grad(float* z, const int* tgt, const float* dlp, const float* dent, u64 m, u64 v, double invT) {
	float t = (float)invT;
	BLOCK_STRIDE(i, m) {
		float* row = z + i * v;
		float mx = LM_NEG_INF;
		for (u64 j = threadIdx.x; j < v; j += blockDim.x) mx = fmaxf(mx, row[j] * t);
		mx = lm_block_max(mx);
		float s = 0.0f, sz = 0.0f;
		for (u64 j = threadIdx.x; j < v; j += blockDim.x) {
			float e = expf(row[j] * t - mx);
			s += e;
			sz += e * (row[j] * t - mx);
		}
		s = lm_block_sum(s);
		sz = lm_block_sum(sz);
		float ls = logf(s), lse = mx + ls, h = ls - sz / s, inv = 1.0f / s;
		float gl = dlp[i], ge = dent ? dent[i] : 0.0f;
		u64 target = (u64)tgt[i];
		for (u64 j = threadIdx.x; j < v; j += blockDim.x) {
			float p = expf(row[j] * t - mx) * inv;
			float g = -gl * p;
			if (ge != 0.0f) g -= ge * p * (row[j] * t - lse + h);
			if (j == target) g += gl;
			row[j] = g * t;
		}
		__syncthreads();
	}
}
`

// lmKernelNames lists the module's kernels.
var lmKernelNames = []string{
	"lm_add", "lm_embed", "lm_embed_grad", "lm_rmsnorm", "lm_rmsnorm_dx", "lm_rmsnorm_dw_partial", "lm_rmsnorm_dw_final",
	"lm_rope", "lm_swiglu", "lm_swiglu_grad", "lm_attn_fwd", "lm_attn_delta", "lm_attn_bwd_q", "lm_attn_bwd_kv",
	"lm_cache_store", "lm_cache_attn", "lm_logprobs", "lm_logprobs_grad",
}
