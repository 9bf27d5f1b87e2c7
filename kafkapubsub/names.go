package kafkapubsub

import (
	"crypto/sha256"
	"encoding/base32"
)

// Names on the cluster. A topic or subscription name may hold any
// character (pubsub.ValidateTopicName), while a Kafka topic name takes
// only ASCII letters, digits, '.', '_' and '-'; so each name is stood
// for by a token, the first 120 bits of its SHA-256 in lower-case base32
// (24 characters). A subscription's names also hold its generation, new
// each time it is created, so that one deleted and created again starts
// afresh.
//
//	the topic's log                 <prefix>.t.<topic>
//	its subscriptions (compacted)   <prefix>.s.<topic>   key: the subscription's name
//	a subscription's share group    <prefix>.g.<topic>.<sub>.<gen>
//	  or, in consumer-group mode, its consumer group
//	                                <prefix>.c.<topic>.<sub>.<gen>
//	  its own log (retries past the delivery limit, re-queued dead messages)
//	                                <prefix>.r.<topic>.<sub>.<gen>
//	  its dead log (one partition)  <prefix>.d.<topic>.<sub>.<gen>
var tokenEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// token stands for name in Kafka names.
func token(name string) string {
	sum := sha256.Sum256([]byte(name))
	return tokenEncoding.EncodeToString(sum[:15])
}

// names are the cluster's names of one topic under a prefix.
type names struct {
	prefix   string
	tok      string
	log      string // the topic's log
	registry string // its subscriptions
}

func topicNames(prefix, topic string) names {
	tok := token(topic)
	return names{prefix: prefix, tok: tok, log: prefix + ".t." + tok, registry: prefix + ".s." + tok}
}

// subNames are the cluster's names of one generation of a subscription.
type subNames struct {
	group  string // its share group
	cgroup string // its consumer group (Options.ConsumerGroups)
	retry  string // its own log
	dead   string // its dead log
}

func (n names) sub(sub, gen string) subNames {
	base := n.tok + "." + token(sub) + "." + gen
	return subNames{group: n.prefix + ".g." + base, cgroup: n.prefix + ".c." + base, retry: n.prefix + ".r." + base, dead: n.prefix + ".d." + base}
}
