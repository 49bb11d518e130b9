// Package minatar holds the five MinAtar games (Young and Tian, 2019) —
// Asterix, Breakout, Freeway, Seaquest and SpaceInvaders — reproducing
// MinAtar 1.0.15 step for step from the seed, registered under its
// Gymnasium ids: MinAtar/<Game>-v0 with all six actions (noop, left, up,
// right, down, fire) and MinAtar/<Game>-v1 with the game's minimal action
// set.
//
// Randomness is NumPy's legacy RandomState (internal/nprand) as MinAtar's
// Gymnasium wrapper uses it: Reset(seed) makes RandomState(seed), which the
// sticky actions and the game share; Reset(NoSeed) continues the stream.
// Each step first draws rand() and repeats the previous action with
// probability sticky_action_prob (default 0.1), then the game acts, drawing
// from the same stream in MinAtar's order. The previous action is not
// cleared by a reset, as in MinAtar. Difficulty ramping (default on) speeds
// Asterix, Seaquest and SpaceInvaders up over an episode. Both are env
// args: sticky_action_prob (a number in [0, 1]) and difficulty_ramping
// (true or false). MinAtar registers no time limit, and neither does this
// package; Freeway ends itself after 2500 frames.
//
// # Observations
//
// An observation is a Box of 10·10·C float32 values, each 0 or 1, the
// game's 10×10×C boolean state in MinAtar's channel-last C order: the value
// of channel c at row y (0 at the top) and column x (0 at the left) is at
// index (y·10 + x)·C + c. A convolutional network should read it as an
// NHWC image of height 10, width 10 and C channels (transpose to NCHW as
// PyTorch-style kernels want). C and the meaning of each channel are the
// game's (MinAtar's channel names):
//
//	Asterix        C=4   player, enemy, trail, gold
//	Breakout       C=4   paddle, ball, trail, brick
//	Freeway        C=7   chicken, car, speed1 … speed5
//	Seaquest       C=10  sub_front, sub_back, friendly_bullet, trail,
//	                     enemy_bullet, enemy_fish, enemy_sub, oxygen_guage,
//	                     diver_guage, diver
//	SpaceInvaders  C=6   cannon, alien, alien_left, alien_right,
//	                     friendly_bullet, enemy_bullet
//
// Render draws the grid with one letter per cell, the letter of the highest
// channel set there (as MinAtar's own display colours a cell), with a
// legend.
package minatar
