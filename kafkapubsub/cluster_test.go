package kafkapubsub_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testBrokerConfigs are those of kafkapubsubtest's cluster: a new
// share-group member gets its assignment within a heartbeat, and a
// released record is swept soon.
var testBrokerConfigs = map[string]string{
	"group.share.heartbeat.interval.ms":   "200",
	"share.record.lock.sweep.interval.ms": "100",
}

// ownCluster starts a kfake cluster of three brokers for t alone, closed
// when t ends, with testBrokerConfigs and more.
func ownCluster(t testing.TB, configs map[string]string, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	all := maps.Clone(testBrokerConfigs)
	maps.Copy(all, configs)
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(3), kfake.BrokerConfigs(all)}, opts...)...)
	if err != nil {
		t.Fatalf("starting a kfake cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// groupOf returns the name of the one group under prefix of kind
// (names.go: "g" a share group, "c" a consumer group), failing t when
// there is not exactly one.
func groupOf(t testing.TB, ctx context.Context, adm *kadm.Client, prefix, kind string) string {
	t.Helper()
	g, err := findGroup(ctx, adm, prefix, kind)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// findGroup returns the name of the one group under prefix of kind.
func findGroup(ctx context.Context, adm *kadm.Client, prefix, kind string) (string, error) {
	listed, err := adm.ListGroups(ctx)
	if kind == "g" {
		listed, err = adm.ListGroupsByType(ctx, []string{"share"})
	}
	if err != nil {
		return "", fmt.Errorf("listing the groups: %w", err)
	}
	var mine []string
	for _, g := range listed.Groups() {
		if strings.HasPrefix(g, prefix+"."+kind+".") {
			mine = append(mine, g)
		}
	}
	if len(mine) != 1 {
		return "", fmt.Errorf("groups %s.%s.*: %v, want one", prefix, kind, mine)
	}
	return mine[0], nil
}

// describeGroup says, for a failure's message, what the cluster says of
// the group of the one subscription under prefix: its state, and each
// member's host and assignment.
func describeGroup(brokers []string, prefix string, groups bool) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	kind := "g"
	if groups {
		kind = "c"
	}
	g, err := findGroup(ctx, adm, prefix, kind)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	if groups {
		described, err := adm.DescribeGroups(ctx, g)
		if err != nil {
			return err.Error()
		}
		d := described[g]
		fmt.Fprintf(&b, "group %s: %s, %d members", g, d.State, len(d.Members))
		for _, m := range d.Members {
			fmt.Fprintf(&b, "; %s:", m.ClientHost)
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range a.Topics {
					fmt.Fprintf(&b, " %s%v", t.Topic, t.Partitions)
				}
			}
		}
		return b.String()
	}
	described, err := adm.DescribeShareGroups(ctx, g)
	if err != nil {
		return err.Error()
	}
	d := described[g]
	fmt.Fprintf(&b, "share group %s: %s, %d members", g, d.GroupState, len(d.Members))
	for _, m := range d.Members {
		fmt.Fprintf(&b, "; %s: %v", m.ClientHost, m.Assignment)
	}
	return b.String()
}

// drained reports, from the cluster, whether the group of the one
// subscription under prefix has settled every record of the logs it reads:
// a share group's start offset (SPSO), or a consumer group's committed
// offset, is each partition's end. It says what is left otherwise.
func drained(ctx context.Context, adm *kadm.Client, group string, groups bool) (bool, string, error) {
	at := map[string]map[int32]int64{} // topic -> partition -> the group's offset
	put := func(topic string, p int32, o int64) {
		if at[topic] == nil {
			at[topic] = map[int32]int64{}
		}
		at[topic][p] = o
	}
	if groups {
		offs, err := adm.FetchOffsets(ctx, group)
		if err == nil {
			err = offs.Error()
		}
		if err != nil {
			return false, "", err
		}
		offs.Each(func(o kadm.OffsetResponse) { put(o.Topic, o.Partition, o.At) })
	} else {
		described, err := adm.DescribeShareGroupOffsets(ctx, group)
		if err == nil {
			err = described.Error()
		}
		if err != nil {
			return false, "", err
		}
		described[group].Offsets.Each(func(o kadm.ShareOffset) { put(o.Topic, o.Partition, o.StartOffset) })
	}
	ends, err := adm.ListEndOffsets(ctx, slices.Collect(maps.Keys(at))...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return false, "", err
	}
	var left []string
	ends.Each(func(e kadm.ListedOffset) {
		if o := at[e.Topic][e.Partition]; o < e.Offset {
			left = append(left, fmt.Sprintf("%s[%d] at %d of %d", e.Topic, e.Partition, o, e.Offset))
		}
	})
	slices.Sort(left)
	return len(left) == 0, strings.Join(left, ", "), nil
}

// waitDrained waits until the group of the one subscription under prefix
// has settled every record (drained), polling the cluster.
func waitDrained(t testing.TB, ctx context.Context, brokers []string, prefix string, groups bool) {
	t.Helper()
	adm := adminOf(t, brokers)
	kind := "g"
	if groups {
		kind = "c"
	}
	group := groupOf(t, ctx, adm, prefix, kind)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, left, err := drained(ctx, adm, group, groups)
		if ok {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("group %s did not settle every record: %s (last error %v)", group, left, err)
		}
	}
}
