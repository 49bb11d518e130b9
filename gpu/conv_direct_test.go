package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestDirectConvGivesThePatchBits: the direct kernels give, bit for bit,
// what the patch route gives (Im2Col, MatMul, BiasAct with ReLU forward,
// and the following dense layer's product when fused; Im2Col and a
// transposed MatMul for the weight gradient), on one and two threads, for
// geometries that step tiles back (output rows of 9 and 12, kernel rows of
// 12, 18, 21 and 30 values: 12 and 18 pair a tile with the half of one,
// after it and before it) and batches that do not split evenly.
func TestDirectConvGivesThePatchBits(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512 kernels here")
	}
	shapes := []struct {
		g   Conv2D
		out int
	}{
		{Conv2D{H: 10, W: 10, C: 4, K: 3, Stride: 1}, 16},  // MinAtar Breakout
		{Conv2D{H: 10, W: 10, C: 10, K: 3, Stride: 1}, 16}, // Seaquest
		{Conv2D{H: 10, W: 10, C: 6, K: 3, Stride: 1}, 16},  // SpaceInvaders
		{Conv2D{H: 10, W: 10, C: 7, K: 3, Stride: 1}, 32},  // Freeway, two strips
		{Conv2D{H: 11, W: 14, C: 3, K: 3, Stride: 1}, 16},  // rows of 12 positions
		{Conv2D{H: 12, W: 20, C: 2, K: 4, Stride: 2}, 48},  // stride 2, rows of 9
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, s := range shapes {
		for _, threads := range []int{1, 2} {
			t.Run(fmt.Sprintf("%dx%dx%d/k%d/s%d/out%d/threads%d", s.g.H, s.g.W, s.g.C, s.g.K, s.g.Stride, s.out, threads), func(t *testing.T) {
				d := NewCPU(threads)
				defer d.Close()
				if !d.ConvDirect(s.g, s.out) {
					t.Fatal("ConvDirect refuses the layer")
				}
				const B = 7
				oh, ow := s.g.Out()
				x := tensorFrom(d, B, s.g.H*s.g.W*s.g.C, randSlice(r, B*s.g.H*s.g.W*s.g.C, 1))
				w := tensorFrom(d, s.g.Patch(), s.out, randSlice(r, s.g.Patch()*s.out, 1))
				bias := tensorFrom(d, 1, s.out, randSlice(r, s.out, 1))
				dy := tensorFrom(d, B*oh*ow, s.out, randSlice(r, B*oh*ow*s.out, 1))

				cols := d.Alloc(B*oh*ow, s.g.Patch())
				d.Im2Col(cols, x, s.g)
				want := d.Alloc(B*oh*ow, s.out)
				d.MatMul(want, cols, false, w, false, 0)
				d.BiasAct(want, bias, ReLU)
				got := d.Alloc(B, oh*ow*s.out)
				d.Fill(got, float32(math.NaN())) // every element must be written
				d.ConvForward(got, x, w, bias, s.g)
				sameBits(t, "forward", d.Data(got), d.Data(want))

				for _, n := range []int{32, 8} { // the fused product, and narrow ones MatMul takes by dot products
					wd := tensorFrom(d, oh*ow*s.out, n, randSlice(r, oh*ow*s.out*n, 1))
					wantZ, gotZ := d.Alloc(B, n), d.Alloc(B, n)
					d.MatMul(wantZ, want.Reshape(B, oh*ow*s.out), false, wd, false, 0)
					d.Fill(got, float32(math.NaN()))
					d.Fill(gotZ, float32(math.NaN()))
					d.ConvForwardDense(got, x, w, bias, gotZ, wd, s.g)
					sameBits(t, "forward before a dense layer", d.Data(got), d.Data(want))
					sameBits(t, fmt.Sprintf("a dense layer of %d after it", n), d.Data(gotZ), d.Data(wantZ))
				}

				wantDW := d.Alloc(s.g.Patch(), s.out)
				d.MatMul(wantDW, cols, true, dy, false, 0)
				gotDW := d.Alloc(s.g.Patch(), s.out)
				d.Fill(gotDW, float32(math.NaN()))
				d.ConvWeightGrad(gotDW, x, dy, s.g)
				sameBits(t, "weight gradient", d.Data(gotDW), d.Data(wantDW))
			})
		}
	}
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s element %d: %v directly, %v through patches", what, i, got[i], want[i])
		}
	}
}

// TestConvDirectTakes: which layers the direct kernels take.
func TestConvDirectTakes(t *testing.T) {
	d := NewCPU(1)
	for _, tc := range []struct {
		g    Conv2D
		out  int
		want bool
	}{
		{Conv2D{H: 10, W: 10, C: 4, K: 3, Stride: 1}, 16, true},
		{Conv2D{H: 10, W: 10, C: 4, K: 3, Stride: 1, Pad: 1}, 16, false}, // padding
		{Conv2D{H: 10, W: 10, C: 4, K: 3, Stride: 1}, 24, false},         // channels not in sixteens
		{Conv2D{H: 8, W: 8, C: 4, K: 3, Stride: 1}, 16, false},           // rows of 6 positions
		{Conv2D{H: 10, W: 10, C: 2, K: 3, Stride: 1}, 16, false},         // kernel rows of 6 values
		{Conv2D{H: 10, W: 10, C: 4, K: 3, Stride: 0}, 16, false},         // invalid
	} {
		if got := d.ConvDirect(tc.g, tc.out); got != (tc.want && hasAVX512) {
			t.Errorf("%+v, %d outputs: ConvDirect = %v", tc.g, tc.out, got)
		}
	}
}
