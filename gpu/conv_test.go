package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

var convShapes = []Conv2D{
	{H: 10, W: 10, C: 4, K: 3, Stride: 1}, {H: 10, W: 10, C: 7, K: 3, Stride: 1, Pad: 1},
	{H: 9, W: 11, C: 3, K: 4, Stride: 2, Pad: 2}, {H: 8, W: 8, C: 16, K: 2, Stride: 2},
	{H: 1, W: 1, C: 1, K: 1, Stride: 1}, {H: 5, W: 7, C: 2, K: 3, Stride: 3, Pad: 1},
}

// TestIm2Col checks every patch element against the definition, and Col2Im
// as its adjoint: ⟨Im2Col(x), y⟩ = ⟨x, Col2Im(y)⟩.
func TestIm2Col(t *testing.T) {
	d := NewCPU(1)
	r := rand.New(rand.NewPCG(1, 2))
	for _, g := range convShapes {
		B := 3
		oh, ow := g.Out()
		xs := randSlice(r, B*g.H*g.W*g.C, 1)
		x, cols := d.Alloc(B, g.H*g.W*g.C), d.Alloc(B*oh*ow, g.Patch())
		d.Upload(x, xs)
		d.Fill(cols, 7) // garbage: every element must be written
		d.Im2Col(cols, x, g)
		cd := d.Data(cols)
		for b := 0; b < B; b++ {
			for oy := 0; oy < oh; oy++ {
				for ox := 0; ox < ow; ox++ {
					for ky := 0; ky < g.K; ky++ {
						for kx := 0; kx < g.K; kx++ {
							for c := 0; c < g.C; c++ {
								iy, ix := oy*g.Stride+ky-g.Pad, ox*g.Stride+kx-g.Pad
								want := float32(0)
								if iy >= 0 && iy < g.H && ix >= 0 && ix < g.W {
									want = xs[b*g.H*g.W*g.C+(iy*g.W+ix)*g.C+c]
								}
								got := cd[((b*oh+oy)*ow+ox)*g.Patch()+(ky*g.K+kx)*g.C+c]
								if got != want {
									t.Fatalf("%+v: patch (%d,%d,%d) element (%d,%d,%d) = %v, want %v", g, b, oy, ox, ky, kx, c, got, want)
								}
							}
						}
					}
				}
			}
		}
		ys := randSlice(r, cols.Len(), 1)
		y, dx := d.Alloc(cols.Rows, cols.Cols), d.Alloc(B, g.H*g.W*g.C)
		d.Upload(y, ys)
		d.Fill(dx, 7)
		d.Col2Im(dx, y, g)
		var lhs, rhs float64
		for i, v := range cd {
			lhs += float64(v) * float64(ys[i])
		}
		for i, v := range d.Data(dx) {
			rhs += float64(v) * float64(xs[i])
		}
		if math.Abs(lhs-rhs) > 1e-4*math.Max(1, math.Abs(lhs)) {
			t.Fatalf("%+v: ⟨im2col(x), y⟩ = %v but ⟨x, col2im(y)⟩ = %v", g, lhs, rhs)
		}
	}
}

func TestConv2DValid(t *testing.T) {
	for _, g := range []Conv2D{{H: 0, W: 1, C: 1, K: 1, Stride: 1}, {H: 3, W: 3, C: 1, K: 4, Stride: 1},
		{H: 3, W: 3, C: 1, K: 3, Stride: 0}, {H: 3, W: 3, C: 1, K: 2, Stride: 1, Pad: 2}} {
		if g.Valid() == nil {
			t.Errorf("%+v accepted", g)
		}
	}
	if oh, ow := (Conv2D{H: 10, W: 10, C: 4, K: 3, Stride: 1}).Out(); oh != 8 || ow != 8 {
		t.Fatalf("10×10, kernel 3: %d×%d", oh, ow)
	}
}

// BenchmarkConv is MinAtar's convolution (10×10×4, 16 filters of 3×3) over
// a minibatch, through patches (Im2Col and products; backwards the weight
// gradient and the input gradient, patches and col2im) and, where the CPU
// has the kernels, directly (the forward pass with bias and ReLU, and the
// weight gradient), on one core and on all of them.
func BenchmarkConv(b *testing.B) {
	for _, threads := range []int{1, 0} {
		for _, B := range []int{64, 1024} {
			g := Conv2D{H: 10, W: 10, C: 4, K: 3, Stride: 1}
			const out = 16
			d := NewCPU(threads)
			oh, ow := g.Out()
			x, cols := d.Alloc(B, g.H*g.W*g.C), d.Alloc(B*oh*ow, g.Patch())
			w, dw, bias := d.Alloc(g.Patch(), out), d.Alloc(g.Patch(), out), d.Alloc(1, out)
			y, dx := d.Alloc(B*oh*ow, out), d.Alloc(B, g.H*g.W*g.C)
			r := rand.New(rand.NewPCG(1, 1))
			d.Upload(x, randSlice(r, x.Len(), 1))
			d.Upload(w, randSlice(r, w.Len(), 1))
			flops := 2 * float64(B*oh*ow*g.Patch()*out)
			name := fmt.Sprintf("threads=%d/B=%d", d.threads, B)
			b.Run(name+"/patches", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					d.Im2Col(cols, x, g)
					d.MatMul(y, cols, false, w, false, 0)
					d.MatMul(dw, cols, true, y, false, 0)
					d.MatMul(cols, y, false, w, true, 0)
					d.Col2Im(dx, cols, g)
				}
				b.ReportMetric(3*flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			if !d.ConvDirect(g, out) {
				d.Close()
				continue
			}
			b.Run(name+"/direct-forward", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					d.ConvForward(y.Reshape(B, oh*ow*out), x, w, bias, g)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			b.Run(name+"/direct-weight-gradient", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					d.ConvWeightGrad(dw, x, y, g)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			// With MinAtar's dense layer of 128 after the convolution: the
			// fused forward pass, and the gradients through that layer
			// (its input gradient's product counted with the convolution's).
			const hidden = 128
			width := oh * ow * out
			wd, z, gd := d.Alloc(width, hidden), d.Alloc(B, hidden), d.Alloc(B, hidden)
			d.Upload(wd, randSlice(r, wd.Len(), 0.1))
			d.Upload(gd, randSlice(r, gd.Len(), 1))
			denseFlops := 2 * float64(B*width*hidden)
			b.Run(name+"/direct-forward-dense", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					d.ConvForwardDense(y.Reshape(B, width), x, w, bias, z, wd, g)
				}
				b.ReportMetric((flops+denseFlops)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			b.Run(name+"/direct-forward-then-dense", func(b *testing.B) { // unfused, to compare
				for i := 0; i < b.N; i++ {
					d.ConvForward(y.Reshape(B, width), x, w, bias, g)
					d.MatMul(z, y.Reshape(B, width), false, wd, false, 0)
				}
				b.ReportMetric((flops+denseFlops)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			b.Run(name+"/direct-gradients-through-dense", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					d.ConvGradsThroughDense(dw, bias, x, y.Reshape(B, width), wd, gd, g)
				}
				b.ReportMetric((flops+denseFlops)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			d.Close()
		}
	}
}
