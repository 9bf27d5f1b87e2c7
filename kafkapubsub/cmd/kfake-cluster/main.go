// Command kfake-cluster runs a throwaway Kafka cluster in this process:
// franz-go's kfake, speaking Kafka's wire protocol, with share groups, on
// free 127.0.0.1 ports, its data in memory. It prints the brokers as one
// comma-separated line on stdout (what $KAFKA_BROKERS takes) and runs
// until SIGINT or SIGTERM, or until the process -parent names has exited;
// then the cluster and its data are gone. scripts/with-kafka.sh starts it
// for `make run BACKEND=kafka` when no cluster is given.
//
//	go run ./kafkapubsub/cmd/kfake-cluster [-brokers 3] [-parent PID]
//
// It is for development and tests, not production: kfake keeps every
// record in memory.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	n := flag.Int("brokers", 3, "the number of brokers, each on a free 127.0.0.1 port")
	parent := flag.Int("parent", 0, "stop once the process of this PID has exited (0: never)")
	flag.Parse()
	if *n < 1 || *parent < 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: kfake-cluster [-brokers N] [-parent PID], N 1 or more")
		os.Exit(2)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(*n), kfake.BrokerConfigs(map[string]string{
		// As kafkapubsubtest's cluster: a new share-group member gets
		// its assignment within a heartbeat, and a released record is
		// swept soon.
		"group.share.heartbeat.interval.ms":   "200",
		"share.record.lock.sweep.interval.ms": "100",
	}))
	if err != nil {
		fmt.Fprintf(os.Stderr, "kfake-cluster: %v\n", err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Println(strings.Join(c.ListenAddrs(), ","))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	// A parent killed without a chance to stop the cluster (SIGKILL)
	// must not leave it running: it is polled every second.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-sig:
			return
		case <-tick.C:
			if *parent > 0 && !alive(*parent) {
				fmt.Fprintf(os.Stderr, "kfake-cluster: process %d has exited: stopping\n", *parent)
				return
			}
		}
	}
}

// alive reports whether the process pid exists (signal 0 checks that
// without sending anything).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}
