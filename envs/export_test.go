package envs

// ForceParallel makes v step on its pool's goroutines every time (or,
// with on false, never), whatever the step costs: for tests that compare
// the two ways bit for bit.
func ForceParallel(v *Vector, on bool) {
	if v.pool == nil {
		panic("ForceParallel on a vector without a stepping pool (SetThreads)")
	}
	v.pool.force = map[bool]int{true: 1, false: -1}[on]
}
