package kafkapubsub

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

var _ driver.TopicLister = (*store)(nil)

// headerTopic names the conveyor topic on every record of its registry:
// Kafka's names of a topic hold a hash of its name (token), which a
// listing cannot read back.
const headerTopic = "conveyor-topic"

// nameHeader is the header of the topic's registry records.
func (st *topicState) nameHeader() []kgo.RecordHeader {
	return []kgo.RecordHeader{{Key: headerTopic, Value: []byte(st.name)}}
}

// Topics lists the topics under the prefix that were published to or
// subscribed (those with a record in their registry), each with its
// subscriptions, sorted by name. It reads every registry under the
// prefix: an operator's call, not one for a hot path.
func (s *store) Topics(ctx context.Context) ([]admin.TopicInfo, error) {
	rctx, cancel := s.request(ctx)
	all, err := s.adm.ListTopics(rctx)
	cancel()
	if err == nil {
		err = all.Error()
	}
	if err != nil {
		return nil, s.fail(ctx, "listing the Kafka topics", err)
	}
	prefix := s.opts.Prefix + ".s."
	out := []admin.TopicInfo{}
	for _, kt := range all.Names() {
		tok, ok := strings.CutPrefix(kt, prefix)
		if !ok {
			continue
		}
		recs, err := s.readLog(ctx, kt, "reading the registry "+kt)
		if err != nil {
			return nil, err
		}
		name := ""
		for _, r := range recs {
			if n := get(r, headerTopic); n != "" && token(n) == tok {
				name = n
			}
		}
		if name == "" {
			continue // nothing written yet
		}
		out = append(out, admin.TopicInfo{Name: name, Subscriptions: registryOf(recs).named()})
	}
	slices.SortFunc(out, func(a, b admin.TopicInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}
