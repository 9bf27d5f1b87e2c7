package kafkapubsub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// store is the Kafka driver.Store: one client that produces and
// administers, the topics as found or made, and each subscription's
// share-group members (receive.go).
type store struct {
	opts resolved
	cl   *kgo.Client
	adm  *kadm.Client
	env  driver.Env

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	bg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	topics map[string]*topicState

	tx txProducers // for batches (batch.go)
}

var _ driver.Store = (*store)(nil)

func newStore(o resolved) (*store, error) {
	cl, err := kgo.NewClient(o.clientOpts()...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	s := &store{opts: o, cl: cl, adm: kadm.NewClient(cl), topics: map[string]*topicState{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// clientOpts are the options of every client of the store: a record up to
// MaxDataSize and conveyor's headers fits a batch.
func (o resolved) clientOpts(more ...kgo.Opt) []kgo.Opt {
	return append([]kgo.Opt{
		kgo.SeedBrokers(o.Brokers...),
		kgo.ProducerBatchMaxBytes(int32(o.MaxDataSize + headerRoom)),
		kgo.RequestTimeoutOverhead(o.RequestTimeout),
		kgo.ProducerLinger(0),
	}, more...)
}

// Open keeps env. The store honours delays (delay.go); no unique key
// (Kafka cannot refuse a key across producers), no caller's transaction.
func (s *store) Open(env driver.Env) (driver.Features, error) {
	s.env = env
	return driver.Delay, nil
}

// Topic returns the topic name, its state made on first use.
func (s *store) Topic(name string) driver.Topic { return s.topic(name) }

// topic returns the state of topic name, made on first use.
func (s *store) topic(name string) *topicState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.topics[name]
	if st == nil {
		st = &topicState{s: s, name: name, n: topicNames(s.opts.Prefix, name), subs: map[string]*subState{}}
		s.topics[name] = st
	}
	return st
}

// Close ends the store's calls, closes every share-group member (which
// gives the records it holds back to the cluster) and the client.
func (s *store) Close() error {
	s.mu.Lock()
	s.closed = true
	topics := make([]*topicState, 0, len(s.topics))
	for _, st := range s.topics {
		topics = append(topics, st)
	}
	s.mu.Unlock()
	s.cancel()
	for _, st := range topics {
		st.mu.Lock()
		subs := make([]*subState, 0, len(st.subs))
		for _, sub := range st.subs {
			subs = append(subs, sub)
		}
		st.mu.Unlock()
		for _, sub := range subs {
			sub.closeWorkers()
		}
	}
	s.bg.Wait()
	s.closeTxProducers()
	s.cl.Close()
	return nil
}

// goBackground runs f in a goroutine Close waits for, unless the store
// is closed; it reports whether it did.
func (s *store) goBackground(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.bg.Go(f)
	return true
}

// request returns ctx bounded by Options.RequestTimeout and by Close.
func (s *store) request(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	if s.ctx.Err() != nil {
		cancel() // closed: AfterFunc would cancel only in a while, from a goroutine of its own
	}
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// fail is the error of a request that failed with err: pubsub.ErrClosed
// when the store closed, the caller's ctx error when ctx ended, else err
// wrapped in ErrUnavailable for a broker that cannot be reached, with
// what was being done.
func (s *store) fail(ctx context.Context, doing string, err error) error {
	switch {
	case s.ctx.Err() != nil:
		return fmt.Errorf("%s: %w", doing, pubsub.ErrClosed)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", doing, ctx.Err())
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return fmt.Errorf("%s: %w (%v)", doing, pubsub.ErrTooLarge, err)
	case errors.Is(err, context.DeadlineExceeded), isUnavailable(err):
		return fmt.Errorf("%s: %w: %w", doing, ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", doing, err)
}

// ErrUnavailable is wrapped by the error of a call the cluster did not
// answer in time, or whose brokers could not be reached.
var ErrUnavailable = errors.New("kafkapubsub: cluster unavailable")

// isUnavailable reports whether err says the cluster could not be
// reached or answered with an error worth retrying.
func isUnavailable(err error) bool {
	var ke *kerr.Error
	var ne net.Error
	return errors.As(err, &ke) && ke.Retriable || errors.As(err, &ne)
}

// kafkaTopic is a Kafka topic conveyor needs: its name, what it is (in
// errors), its partition count and whether it is compacted.
type kafkaTopic struct {
	name       string
	what       string
	partitions int32
	// configured: its partition count is Options.Partitions, which a
	// bound PubSub does not hold the operator's topic to; else conveyor
	// reads it as one partition, which it must have.
	configured bool
	compact    bool
}

// createTopic creates Kafka topic k unless it exists; existed reports
// whether it did.
func (s *store) createTopic(ctx context.Context, k kafkaTopic) (existed bool, err error) {
	rctx, cancel := s.request(ctx)
	defer cancel()
	maxBytes := strconv.Itoa(s.opts.MaxDataSize + headerRoom)
	repl := s.opts.Replication
	if repl == 0 {
		repl = -1
	}
	configs := map[string]*string{"max.message.bytes": &maxBytes}
	if k.compact {
		policy := "compact"
		configs["cleanup.policy"] = &policy
	}
	resp, err := s.adm.CreateTopic(rctx, k.partitions, repl, configs, k.name)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return true, nil
	}
	if err != nil {
		return false, s.fail(ctx, "creating Kafka topic "+k.name, err)
	}
	return false, nil
}

// maxMessageBytes returns the max.message.bytes of Kafka topic name, 0
// when the cluster does not say.
func (s *store) maxMessageBytes(ctx context.Context, name string) (int, error) {
	rctx, cancel := s.request(ctx)
	defer cancel()
	configs, err := s.adm.DescribeTopicConfigs(rctx, name)
	var rc kadm.ResourceConfig
	if err == nil {
		rc, err = configs.On(name, nil)
	}
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return 0, s.fail(ctx, "reading the configuration of Kafka topic "+name, err)
	}
	for _, c := range rc.Configs {
		if c.Key == "max.message.bytes" && c.Value != nil {
			n, _ := strconv.Atoi(*c.Value)
			return n, nil
		}
	}
	return 0, nil
}

// partitionCount returns the partition count of Kafka topic name, on the
// store's own client (a metadata request, not served from a cache).
func (s *store) partitionCount(ctx context.Context, name string) (int32, error) {
	rctx, cancel := s.request(ctx)
	defer cancel()
	td, err := s.adm.ListTopics(rctx, name)
	if err == nil {
		err = td.Error()
	}
	if err != nil {
		return 0, s.fail(ctx, "reading the partitions of Kafka topic "+name, err)
	}
	return int32(len(td[name].Partitions)), nil
}

// readLog returns the records of partition 0 of topic from its start to
// its last stable offset as of now, none when topic does not exist.
// Records of committed transactions are read, their markers not
// returned.
func (s *store) readLog(ctx context.Context, topic, doing string) ([]*kgo.Record, error) {
	rctx, cancel := s.request(ctx)
	defer cancel()
	starts, err := s.adm.ListStartOffsets(rctx, topic)
	if err == nil {
		err = starts.Error()
	}
	var ends kadm.ListedOffsets
	if err == nil {
		// Up to the last stable offset, transaction markers included
		// (KeepControlRecords), so that the last offset read is end-1.
		ends, err = s.adm.ListCommittedOffsets(rctx, topic)
	}
	if err == nil {
		err = ends.Error()
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil, nil
	}
	if err != nil {
		return nil, s.fail(ctx, doing, err)
	}
	start, _ := starts.Lookup(topic, 0)
	end, _ := ends.Lookup(topic, 0)
	if start.Offset >= end.Offset {
		return nil, nil
	}
	cl, err := kgo.NewClient(s.opts.clientOpts(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().At(start.Offset)},
	}), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		// A session is of no use to one read, and franz-go's Close
		// kills a session without waiting for a fetch under way to end
		// (a data race the race detector found in a Receive's lookup).
		kgo.DisableFetchSessions())...)
	if err != nil {
		return nil, s.fail(ctx, doing, err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for {
		fetches := cl.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			return nil, s.fail(ctx, doing, err)
		}
		if err := fetchErr(fetches); err != nil {
			return nil, s.fail(ctx, doing, err)
		}
		for _, r := range fetches.Records() {
			if r.Offset >= end.Offset {
				return out, nil
			}
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
			if r.Offset == end.Offset-1 {
				return out, nil
			}
		}
	}
}

// endOffsets returns the end offset of each partition of topic.
func (s *store) endOffsets(ctx context.Context, topic string) (map[int32]int64, error) {
	rctx, cancel := s.request(ctx)
	defer cancel()
	ends, err := s.adm.ListEndOffsets(rctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, s.fail(ctx, "looking up the end of "+topic, err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}

// setGroupConfig sets config key of share group group to value.
func (s *store) setGroupConfig(ctx context.Context, group, key, value string) error {
	rctx, cancel := s.request(ctx)
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value, c.Op = key, &value, kmsg.IncrementalAlterConfigOpSet
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(rctx, s.cl)
	if err == nil {
		for _, r := range resp.Resources {
			if err = kerr.ErrorForCode(r.ErrorCode); err != nil {
				break
			}
		}
	}
	if err != nil {
		return s.fail(ctx, fmt.Sprintf("setting %s of share group %s", key, group), err)
	}
	return nil
}
