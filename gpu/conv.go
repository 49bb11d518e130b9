package gpu

import "fmt"

// Conv2D is the geometry of a 2-D convolution over a batch of images held
// channel-last (NHWC): image b of a B×(H·W·C) tensor has the value of
// channel c at row y and column x at column (y·W + x)·C + c of row b.
//
// A convolution is computed as a matrix product over patches (im2col): the
// patches of every output position form the rows of a (B·OH·OW)×(K·K·C)
// matrix whose column (ky·K + kx)·C + c holds input channel c at kernel
// offset (ky, kx); times a (K·K·C)×out weight matrix, it gives the
// (B·OH·OW)×out output, which is again channel-last: B×(OH·OW·out).
type Conv2D struct {
	H, W, C        int // input height, width and channels
	K, Stride, Pad int // square kernel size, stride, zero padding on every side
}

// Out is the output height and width: ⌊(H + 2·Pad − K) / Stride⌋ + 1 (and
// the same for W), as PyTorch's Conv2d.
func (g Conv2D) Out() (oh, ow int) {
	return (g.H+2*g.Pad-g.K)/g.Stride + 1, (g.W+2*g.Pad-g.K)/g.Stride + 1
}

// Patch is the length of one patch, K·K·C.
func (g Conv2D) Patch() int { return g.K * g.K * g.C }

// Valid says what is wrong with the geometry, or nil.
func (g Conv2D) Valid() error {
	switch {
	case g.H < 1 || g.W < 1 || g.C < 1:
		return fmt.Errorf("input %d×%d×%d has no pixels", g.H, g.W, g.C)
	case g.K < 1 || g.Stride < 1 || g.Pad < 0:
		return fmt.Errorf("kernel %d, stride %d, padding %d: kernel and stride must be at least 1, padding at least 0", g.K, g.Stride, g.Pad)
	case g.Pad >= g.K:
		return fmt.Errorf("padding %d is not smaller than the kernel %d (whole patches of padding)", g.Pad, g.K)
	case g.H+2*g.Pad < g.K || g.W+2*g.Pad < g.K:
		return fmt.Errorf("kernel %d is larger than the padded %d×%d input", g.K, g.H+2*g.Pad, g.W+2*g.Pad)
	}
	return nil
}

// checkIm2Col panics when cols and x do not fit g (a programming error, as
// with slice bounds); it returns the batch size.
func checkIm2Col(cols, x Tensor, g Conv2D) int {
	if err := g.Valid(); err != nil {
		panic("gpu: conv: " + err.Error())
	}
	oh, ow := g.Out()
	if x.Cols != g.H*g.W*g.C || cols.Cols != g.Patch() || cols.Rows != x.Rows*oh*ow {
		panic(fmt.Sprintf("gpu: im2col shapes: images %d×%d, patches %d×%d for %d×%d×%d, kernel %d, stride %d, padding %d",
			x.Rows, x.Cols, cols.Rows, cols.Cols, g.H, g.W, g.C, g.K, g.Stride, g.Pad))
	}
	return x.Rows
}

// Im2Col implements Device.
func (d *CPU) Im2Col(cols, x Tensor, g Conv2D) {
	d.im2col(cols, x, g, false)
}

// Col2Im implements Device: the adjoint of Im2Col, adding every patch
// element back onto the pixel it was read from (rows in order, so the sums
// are deterministic).
func (d *CPU) Col2Im(dx, cols Tensor, g Conv2D) {
	clear(d.data(dx))
	d.im2col(cols, dx, g, true)
}

// im2col copies pixels into patches or, when back is set, adds patches
// onto pixels. Rows of a patch read whole runs of K·C values where the
// kernel lies inside the image.
func (d *CPU) im2col(cols, x Tensor, g Conv2D, back bool) {
	B := checkIm2Col(cols, x, g)
	cd, xd := d.data(cols), d.data(x)
	oh, ow := g.Out()
	H, W, C, K, S, P := g.H, g.W, g.C, g.K, g.Stride, g.Pad
	kc, patch, line, img := K*C, g.Patch(), W*C, H*W*C
	r := 0
	for b := 0; b < B; b++ {
		xb := xd[b*img : (b+1)*img]
		for oy := 0; oy < oh; oy++ {
			for ox := 0; ox < ow; ox++ {
				row := cd[r*patch : (r+1)*patch]
				r++
				x0 := ox*S - P
				for ky := 0; ky < K; ky++ {
					seg := row[ky*kc : (ky+1)*kc]
					iy := oy*S + ky - P
					if iy < 0 || iy >= H {
						if !back {
							clear(seg)
						}
						continue
					}
					xl := xb[iy*line : (iy+1)*line]
					if x0 >= 0 && x0+K <= W {
						move(seg, xl[x0*C:(x0+K)*C], back)
						continue
					}
					for kx := 0; kx < K; kx++ {
						s := seg[kx*C : (kx+1)*C]
						if ix := x0 + kx; ix >= 0 && ix < W {
							move(s, xl[ix*C:(ix+1)*C], back)
						} else if !back {
							clear(s)
						}
					}
				}
			}
		}
	}
}

// move copies pix into patch, or adds patch onto pix when back is set.
func move(patch, pix []float32, back bool) {
	if !back {
		copy(patch, pix)
		return
	}
	pix = pix[:len(patch)]
	for i, v := range patch {
		pix[i] += v
	}
}
