package service

import (
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStopWaitsForEveryLoop(t *testing.T) {
	g := NewGroup()
	var returned atomic.Int32
	for range 3 {
		g.Go(func(stop <-chan struct{}) {
			<-stop
			time.Sleep(10 * time.Millisecond) // finishing its work
			returned.Add(1)
		})
	}
	if g.IsStopping() {
		t.Fatal("stopping before Stop")
	}
	g.Stop()
	if n := returned.Load(); n != 3 {
		t.Fatalf("Stop returned with %d of 3 loops done", n)
	}
	if g.Go(func(<-chan struct{}) { t.Error("a loop started after Stop") }) {
		t.Fatal("Go after Stop reported true")
	}
	g.Stop() // a second Stop only waits
}

func TestContextEndsWithStop(t *testing.T) {
	g := NewGroup()
	ended := make(chan struct{})
	g.Go(func(stop <-chan struct{}) {
		ctx, cancel := Context(stop)
		defer cancel()
		<-ctx.Done()
		close(ended)
	})
	g.Stop()
	select {
	case <-ended:
	default:
		t.Fatal("the loop's ctx did not end with Stop")
	}
}

func TestSleep(t *testing.T) {
	stop := make(chan struct{})
	if !Sleep(stop, time.Millisecond) {
		t.Fatal("Sleep did not report that d passed")
	}
	close(stop)
	if Sleep(stop, time.Hour) {
		t.Fatal("Sleep on a closed stop reported that an hour passed")
	}
}
