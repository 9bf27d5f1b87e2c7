package kafkapubsub

import (
	"crypto/sha256"
	"encoding/base32"
)

// Names on the cluster. A topic name may hold any character
// (pubsub.ValidateTopicName), while a Kafka topic name takes only ASCII
// letters, digits, '.', '_' and '-'; so a topic is stood for by a token,
// the first 120 bits of its SHA-256 in lower-case base32 (24
// characters).
//
//	the topic's log         <prefix>.t.<topic>
//	its default subscription's own log (retries past the delivery
//	limit, re-queued dead messages)
//	                        <prefix>.r.<topic>
//	its dead log            <prefix>.d.<topic>   (one partition)
//	its share group         <prefix>.g.<topic>
var tokenEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// token stands for name in Kafka names.
func token(name string) string {
	sum := sha256.Sum256([]byte(name))
	return tokenEncoding.EncodeToString(sum[:15])
}

// names are the cluster's names of one topic under a prefix.
type names struct {
	log   string // the topic's log
	retry string // its subscription's own log
	dead  string // its dead log
	group string // its share group
}

func topicNames(prefix, topic string) names {
	tok := token(topic)
	return names{
		log:   prefix + ".t." + tok,
		retry: prefix + ".r." + tok,
		dead:  prefix + ".d." + tok,
		group: prefix + ".g." + tok,
	}
}
