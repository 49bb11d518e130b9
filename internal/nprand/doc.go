// Package nprand reproduces NumPy's random streams bit for bit, so that Go
// worlds seeded with an integer draw exactly the numbers their Python
// originals draw: the legacy RandomState (MT19937 seeded from a 32-bit
// integer or an array of words, with RandomState's ways of turning words
// into doubles, bounded integers and choices), which MinAtar uses, and
// Generator(PCG64(SeedSequence(seed))), which Gymnasium's np_random is.
//
// Everything here is written from NumPy's documented algorithms
// (numpy/random/src/mt19937, src/pcg64, bit_generator.pyx's SeedSequence,
// distributions.c's bounded integers); the tests compare against values
// recorded from NumPy 1.24.2 by scripts/record-nprand.py.
package nprand
