//go:build amd64 && !purego

package gpu

import (
	"math/rand/v2"
	"testing"
)

// TestAVX512KernelsGiveTheAVX2Bits: the AVX-512 kernels (4×64, 8×32, 8×16) run each
// element's multiply-adds in the AVX2 kernels' order, so every product,
// plain or with A transposed, with k panels, leftover rows and 16-column
// remainders, has the same bits on both kernel sets.
func TestAVX512KernelsGiveTheAVX2Bits(t *testing.T) {
	if !hasFMA || !hasAVX512 {
		t.Skip("this CPU has no AVX-512 (or AGENTTRAINER_CPU_KERNELS=avx2)")
	}
	defer func() { hasAVX512 = true }()
	r := rand.New(rand.NewPCG(21, 22))
	for _, s := range []struct{ m, n, k int }{
		{4, 64, 1}, {37, 64, 5}, {64, 128, 2*gemmKC + 44}, {8, 80, 129}, {13, 208, 64}, {1030, 256, 256}, {3, 64, 7},
		{20, 96, 300}, {70, 160, 33}, // 8×32 tiles, four rows left, a 16-column remainder
		{37, 16, 300}, {1030, 16, 36}, // 8×16 tiles (a 16-channel convolution)
		{70, 1072, 300}, {13, 1304, 40}, // blocks of gemmNC columns, the last one widened, an 8-column remainder
		{300, 1072, 300}, // several blocks of rows a core through both blocks of columns
	} {
		for _, transA := range []bool{false, true} {
			av, bv, cv := randSlice(r, s.m*s.k, 1), randSlice(r, s.k*s.n, 1), randSlice(r, s.m*s.n, 1)
			ar, ac := s.m, s.k
			if transA {
				ar, ac = s.k, s.m
			}
			product := func(avx512 bool, beta float32) []float32 {
				hasAVX512 = avx512
				d := NewCPU(2)
				defer d.Close()
				c := tensorFrom(d, s.m, s.n, cv)
				d.MatMul(c, tensorFrom(d, ar, ac, av), transA, tensorFrom(d, s.k, s.n, bv), false, beta)
				return d.Data(c)
			}
			for _, beta := range []float32{0, 1} {
				want, got := product(false, beta), product(true, beta)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%d×%d×%d transA=%v beta=%v: C[%d] = %v with AVX-512, %v with AVX2", s.m, s.n, s.k, transA, beta, i, got[i], want[i])
					}
				}
			}
		}
	}
}

func TestChooseKernels(t *testing.T) {
	for _, tc := range []struct {
		choice           string
		fma, avx512      bool
		wantFMA, want512 bool
	}{
		{"", true, true, true, true},
		{"auto", true, false, true, false},
		{"avx2", true, true, true, false},
		{"portable", true, true, false, false},
		{"bogus", true, true, true, true},
		{"", false, true, false, false}, // AVX-512 kernels only beside the AVX2 ones
	} {
		gotFMA, got512 := chooseKernels(tc.choice, tc.fma, tc.avx512)
		if gotFMA != tc.wantFMA || got512 != tc.want512 {
			t.Errorf("chooseKernels(%q, %v, %v) = %v, %v; want %v, %v", tc.choice, tc.fma, tc.avx512, gotFMA, got512, tc.wantFMA, tc.want512)
		}
	}
}
