package di

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// within fails t if f does not return within 5s: di must never deadlock.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("did not return within 5s: deadlock")
	}
}

// newCtx returns a context with a fresh injector, shut down at cleanup.
func newCtx(t testing.TB) context.Context {
	t.Helper()
	ctx := NewContext(context.Background())
	t.Cleanup(func() { _ = Shutdown(ctx) })
	return ctx
}

// must fails t on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
