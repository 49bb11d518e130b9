package gpu

import "math"

// Plain float64 references of the transformer ops: the loops the CPU
// kernels are checked against, and the functions whose finite differences
// check the backward passes.

// refRMSNorm normalises groups of width columns from col in each row of
// x (rows of c), weight w.
func refRMSNorm(x []float64, c, col, groups, width int, w []float64, eps float64) []float64 {
	y := append([]float64(nil), x...)
	for i := 0; i < len(x)/c; i++ {
		for g := 0; g < groups; g++ {
			off := i*c + col + g*width
			var ss float64
			for j := 0; j < width; j++ {
				ss += x[off+j] * x[off+j]
			}
			r := 1 / math.Sqrt(ss/float64(width)+eps)
			for j := 0; j < width; j++ {
				y[off+j] = x[off+j] * r * w[j]
			}
		}
	}
	return y
}

// refRopeTables tabulates cos and sin of p·θ_j for transformers' default
// inverse frequencies θ_j = base^(−2j/hd).
func refRopeTables(maxPos, hd int, base float64) (cos, sin []float32) {
	half := hd / 2
	for p := 0; p < maxPos; p++ {
		for j := 0; j < half; j++ {
			a := float64(p) * math.Pow(base, -float64(2*j)/float64(hd))
			cos, sin = append(cos, float32(math.Cos(a))), append(sin, float32(math.Sin(a)))
		}
	}
	return cos, sin
}

// refRope rotates heads of hd columns from col in rotate_half layout.
func refRope(x []float64, c, col, heads, hd int, pos []int32, cos, sin []float32, inverse bool) []float64 {
	y := append([]float64(nil), x...)
	half := hd / 2
	for i := 0; i < len(x)/c; i++ {
		for h := 0; h < heads; h++ {
			off := i*c + col + h*hd
			for j := 0; j < half; j++ {
				cs, sn := float64(cos[int(pos[i])*half+j]), float64(sin[int(pos[i])*half+j])
				if inverse {
					sn = -sn
				}
				u, v := x[off+j], x[off+half+j]
				y[off+j] = u*cs - v*sn
				y[off+half+j] = v*cs + u*sn
			}
		}
	}
	return y
}

// refSwiGLU is silu(g)·u for rows [g | u] of width 2w.
func refSwiGLU(gu []float64, w int) []float64 {
	n := len(gu) / (2 * w)
	h := make([]float64, n*w)
	for i := 0; i < n; i++ {
		for j := 0; j < w; j++ {
			g, u := gu[i*2*w+j], gu[i*2*w+w+j]
			h[i*w+j] = g / (1 + math.Exp(-g)) * u
		}
	}
	return h
}

// refAttention is causal grouped-query attention written as its
// definition: for each row, head and key, in float64.
func refAttention(qkv []float64, mask []int32, batch, seq, heads, kvHeads, hd int, scale float64) []float64 {
	w := (heads + 2*kvHeads) * hd
	out := make([]float64, batch*seq*heads*hd)
	for b := 0; b < batch; b++ {
		for i := 0; i < seq; i++ {
			r := b*seq + i
			if mask != nil && mask[r] == 0 {
				continue
			}
			for h := 0; h < heads; h++ {
				g := h * kvHeads / heads
				var s []float64
				var idx []int
				mx := math.Inf(-1)
				for j := 0; j <= i; j++ {
					if mask != nil && mask[b*seq+j] == 0 {
						continue
					}
					var dotv float64
					for c := 0; c < hd; c++ {
						dotv += qkv[r*w+h*hd+c] * qkv[(b*seq+j)*w+(heads+g)*hd+c]
					}
					s, idx = append(s, dotv*scale), append(idx, j)
					mx = math.Max(mx, dotv*scale)
				}
				var sum float64
				for k := range s {
					s[k] = math.Exp(s[k] - mx)
					sum += s[k]
				}
				for k, j := range idx {
					for c := 0; c < hd; c++ {
						out[(r*heads+h)*hd+c] += s[k] / sum * qkv[(b*seq+j)*w+(heads+kvHeads+g)*hd+c]
					}
				}
			}
		}
	}
	return out
}

// refLogProbs is log softmax(t·z)[target] and the entropy, per row.
func refLogProbs(z []float64, v int, targets []int32, t float64) (lp, ent []float64) {
	for i := range targets {
		row := z[i*v : (i+1)*v]
		mx := math.Inf(-1)
		for _, x := range row {
			mx = math.Max(mx, t*x)
		}
		var s float64
		for _, x := range row {
			s += math.Exp(t*x - mx)
		}
		lse := mx + math.Log(s)
		var h float64
		for _, x := range row {
			l := t*x - lse
			h -= math.Exp(l) * l
		}
		lp, ent = append(lp, t*row[targets[i]]-lse), append(ent, h)
	}
	return lp, ent
}
