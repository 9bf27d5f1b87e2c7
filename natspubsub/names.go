package natspubsub

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// Names on the server. A topic or subscription name may hold any character
// (pubsub.ValidateTopicName), while stream, consumer and subject names
// may not hold '.', '*', '>' or white space; so each name is stood for by
// a token, the first 120 bits of its SHA-256 in lower-case base32 (24
// characters), and the name itself is kept in the stream's or consumer's
// description.
//
//	topic stream       <prefix>_t_<topic>           subjects <prefix>.t.<topic>.>
//	  a publish                                      <prefix>.t.<topic>.all
//	  a re-queued dead message, for one subscription <prefix>.t.<topic>.to.<sub>
//	  a subscription   consumer c_<sub>             (durable, pull, filter <prefix>.t.<topic>.>)
//	dead-letter stream <prefix>_d_<topic>           subjects <prefix>.d.<topic>.<sub>
//	inbox bucket       <prefix>_i_<topic>           keys <sub>.<key> (stream KV_<bucket>)
//	schedule stream    <prefix>_s_<topic>           subject <prefix>.s.<topic> (consumer mover)
var tokenEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// token stands for name in stream, consumer and subject names.
func token(name string) string {
	sum := sha256.Sum256([]byte(name))
	return tokenEncoding.EncodeToString(sum[:15])
}

// names are the server-side names of one topic under a prefix.
type names struct {
	stream      string // the topic's stream
	subjects    string // its subjects, a wildcard
	publish     string // the subject of a publish
	toPrefix    string // the subject of a re-queue, less the subscription's token
	deadStream  string // the dead-letter stream
	deadPrefix  string // a dead message's subject, less the subscription's token
	inbox       string // the inbox's key-value bucket
	schedStream string // the stream of delayed messages
	schedule    string // its subject
}

func topicNames(prefix, topic string) names {
	tok := token(topic)
	base := prefix + ".t." + tok
	return names{
		stream:      prefix + "_t_" + tok,
		subjects:    base + ".>",
		publish:     base + ".all",
		toPrefix:    base + ".to.",
		deadStream:  prefix + "_d_" + tok,
		deadPrefix:  prefix + ".d." + tok + ".",
		inbox:       prefix + "_i_" + tok,
		schedStream: prefix + "_s_" + tok,
		schedule:    prefix + ".s." + tok,
	}
}

// inboxStream is the stream that holds key-value bucket.
func inboxStream(bucket string) string { return "KV_" + bucket }

// inboxSubject is the subject of key (or a wildcard of keys) in bucket.
func inboxSubject(bucket, key string) string { return "$KV." + bucket + "." + key }

// consumerName is the durable consumer of subscription sub.
func consumerName(sub string) string { return "c_" + token(sub) }

// addressedTo reports whether a message on subject, of the topic named by
// n, is for subscription token subTok: a publish is for all, a re-queue
// for one.
func (n names) addressedTo(subject, subTok string) bool {
	rest, ok := strings.CutPrefix(subject, n.toPrefix)
	return !ok || rest == subTok
}

// Subject returns the subject on which a publisher outside conveyor
// (nats.go, the nats CLI, another language) publishes a message to topic
// of the PubSubs with Options.Prefix prefix ("" means DefaultPrefix):
// "<prefix>.t.<token>.all", where the token is the first 15 bytes of the
// SHA-256 of the topic's name in lower-case base32 without padding. The
// topic must be in use already (docs/natspubsub.md, "Publishing without
// conveyor", says what such a message gets).
func Subject(prefix, topic string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return topicNames(prefix, topic).publish
}
