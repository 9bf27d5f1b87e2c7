//go:build race

package template_test

// raceEnabled says that the tests run with the race detector: the app's
// binary is then built with it too.
const raceEnabled = true
