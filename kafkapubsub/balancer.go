package kafkapubsub

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// perTopicBalancer assigns the partitions of a consumer-group-mode
// subscription's members (group.go). Each topic (the log, the
// subscription's own log) is split evenly on its own, so that no process
// gets only partitions of the subscription's own log, which holds little;
// a member keeps the partitions it owns as far as the split allows
// (sticky); and the rebalance is cooperative (KIP-429): a partition that
// moves is first revoked from its owner, then assigned in the next round,
// and the partitions that stay are never revoked, so the deliveries in
// hand of a process are not lost when another process joins or leaves.
// franz-go's cooperative-sticky balancer is sticky and cooperative but
// balances the members' counts over all topics together.
type perTopicBalancer struct{}

// ProtocolName names the protocol in the group: every member of a
// subscription's group uses this one.
func (perTopicBalancer) ProtocolName() string { return "conveyor-cooperative-per-topic" }

// IsCooperative: partitions move in two rounds, only the ones that move
// are revoked.
func (perTopicBalancer) IsCooperative() bool { return true }

// JoinGroupMetadata says the topics the member reads and the partitions
// it owns, with the generation they are of (ordered, so that the same
// state is the same bytes).
func (perTopicBalancer) JoinGroupMetadata(topics []string, owned map[string][]int32, generation int32) []byte {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = topics
	meta.Generation = generation
	for topic, ps := range owned {
		o := kmsg.NewConsumerMemberMetadataOwnedPartition()
		o.Topic = topic
		o.Partitions = slices.Sorted(slices.Values(ps))
		meta.OwnedPartitions = append(meta.OwnedPartitions, o)
	}
	slices.SortFunc(meta.OwnedPartitions, func(a, b kmsg.ConsumerMemberMetadataOwnedPartition) int {
		return strings.Compare(a.Topic, b.Topic)
	})
	return meta.AppendTo(nil)
}

// ParseSyncAssignment reads the assignment the leader sent.
func (perTopicBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	return kgo.ParseConsumerSyncAssignment(assignment)
}

// MemberBalancer reads the members' metadata, for Balance.
func (b perTopicBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	cb, err := kgo.NewConsumerBalancer(b, members)
	return cb, cb.MemberTopics(), err
}

// Balance splits each topic's partitions (topics: their counts) evenly
// between the members that read it, in member order: each member keeps
// what it owns up to its share; the partitions left go to the members
// below their share. A partition claimed by several members (one missed
// a rebalance) is the claim of the latest generation's. Partitions that
// move are then taken out of this round (AdjustCooperative).
func (perTopicBalancer) Balance(cb *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	plan := cb.NewPlan()
	for topic, n := range topics {
		var readers []int // the members that read topic, in member order
		for i := range cb.Members() {
			if _, meta := cb.MemberAt(i); slices.Contains(meta.Topics, topic) {
				readers = append(readers, i)
			}
		}
		if len(readers) == 0 || n <= 0 {
			continue
		}
		// The claim of each partition: the member of the latest
		// generation that says it owns it.
		claim := make(map[int32]int, n) // partition → reader's index
		claimGen := make(map[int32]int32, n)
		for ri, i := range readers {
			_, meta := cb.MemberAt(i)
			for _, o := range meta.OwnedPartitions {
				if o.Topic != topic {
					continue
				}
				for _, p := range o.Partitions {
					if g, ok := claimGen[p]; p >= 0 && p < n && (!ok || meta.Generation > g) {
						claim[p], claimGen[p] = ri, meta.Generation
					}
				}
			}
		}
		m := int32(len(readers))
		share, extra := n/m, n%m // each gets share; extra of them one more
		got := make([][]int32, len(readers))
		claimed := make([][]int32, len(readers))
		for p := range n {
			if ri, ok := claim[p]; ok {
				claimed[ri] = append(claimed[ri], p)
			}
		}
		kept := make(map[int32]bool, n)
		keep := func(ri int, p int32) {
			got[ri] = append(got[ri], p)
			kept[p] = true
		}
		for ri, ps := range claimed { // each keeps up to its share
			for _, p := range ps[:min(int32(len(ps)), share)] {
				keep(ri, p)
			}
		}
		for ri, ps := range claimed { // and one more while extras last
			if extra > 0 && int32(len(ps)) > share {
				keep(ri, ps[share])
				extra--
			}
		}
		var free []int32
		for p := range n {
			if !kept[p] {
				free = append(free, p)
			}
		}
		for ri := range readers { // up to the share
			for int32(len(got[ri])) < share && len(free) > 0 {
				keep(ri, free[0])
				free = free[1:]
			}
		}
		for ri := range readers { // the extras left, one each
			if len(free) == 0 {
				break
			}
			if int32(len(got[ri])) == share {
				keep(ri, free[0])
				free = free[1:]
			}
		}
		for ri, i := range readers {
			if len(got[ri]) > 0 {
				member, _ := cb.MemberAt(i)
				plan.AddPartitions(member, topic, got[ri])
			}
		}
	}
	plan.AdjustCooperative(cb)
	return plan
}
