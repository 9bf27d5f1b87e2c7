package kafkapubsub

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A registry written before the log layer kept the description reads the
// same: the default's reserve with its Until, a listed subscription, and
// neither a record conveyor did not write nor a deleted one.
func TestRegistryOfStoredRecords(t *testing.T) {
	rec := func(key, value string) *kgo.Record {
		r := &kgo.Record{Key: []byte(key)}
		if value != "" {
			r.Value = []byte(value)
		}
		return r
	}
	reg := registryOf([]*kgo.Record{
		rec("default", `{"subscription":"default","gen":"d1","reserve":true,"until":{"0":5,"1":3},"created":7}`),
		rec("a", `{"subscription":"a","gen":"a1","retry":{"MaxAttempts":2,"MinBackoff":0,"MaxBackoff":0,"Jitter":0},"created":8,"consumer_groups":true}`),
		rec("b", `{"subscription":"b","gen":"b1"}`),
		rec("b", ""),
		rec("x", `{"name":"x"}`),
		rec("y", `{"subscription":"z","gen":"z1"}`),
	})
	if got := reg.named(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("named = %q, want [a]", got)
	}
	def, a := reg["default"], reg["a"]
	if len(reg) != 2 || !def.Reserve || def.Gen != "d1" || def.Created != 7 || def.Until[0] != 5 || def.Until[1] != 3 {
		t.Fatalf("registry = %+v", reg)
	}
	if a.Retry == nil || a.Retry.MaxAttempts != 2 || !a.Groups || a.Gen != "a1" {
		t.Fatalf("subscription a = %+v", a)
	}

	// Declared when the log ends at 9 and 3: it skips [5, 9) of partition
	// 0 and nothing of partition 1.
	declared, err := def.Declare(nil, func() (offsets, error) { return offsets{0: 9, 1: 3}, nil })
	if err != nil || declared.Reserve || declared.Until.IsSet() {
		t.Fatalf("Declare = %+v, %v", declared, err)
	}
	def.Subscription = declared
	for _, c := range []struct {
		p    int32
		o    int64
		want bool
	}{{0, 4, false}, {0, 5, true}, {0, 8, true}, {0, 9, false}, {1, 2, false}, {1, 3, false}, {2, 0, false}} {
		if got := def.Skips(&kgo.Record{Partition: c.p, Offset: c.o}); got != c.want {
			t.Errorf("Skips(partition %d, offset %d) = %v, want %v", c.p, c.o, got, c.want)
		}
	}
}
