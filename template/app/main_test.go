package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the tests if a goroutine outlives them: the app must stop
// everything it starts.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
