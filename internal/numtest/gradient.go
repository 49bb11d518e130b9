package numtest

import "math"

// Gradient compares an analytic gradient with central differences of f
// in every element of x (restored after each), with step h: an element
// disagrees when |numeric − analytic| > abs + rel·|numeric|. It calls
// bad(i, analytic, numeric) for each one that does.
func Gradient(f func() float64, x []float64, grad []float32, h, abs, rel float64, bad func(i int, analytic float32, numeric float64)) {
	for i := range x {
		orig := x[i]
		x[i] = orig + h
		up := f()
		x[i] = orig - h
		down := f()
		x[i] = orig
		num := (up - down) / (2 * h)
		if math.Abs(num-float64(grad[i])) > abs+rel*math.Abs(num) {
			bad(i, grad[i], num)
		}
	}
}
