package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	every := flag.Duration("every", 20*time.Second, "name the packages still running after this long without output")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *every); err != nil {
		fmt.Fprintf(os.Stderr, "testprogress: %v\n", err)
		os.Exit(1)
	}
}

// run formats the events read from r onto w until r ends, naming the
// running packages after each quiet period of every.
func run(r io.Reader, w io.Writer, every time.Duration) error {
	f := newFormatter(w, time.Now)
	lines := make(chan []byte)
	errc := make(chan error, 1)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		errc <- sc.Err()
	}()
	quiet := time.NewTimer(every)
	defer quiet.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				f.summary()
				return <-errc
			}
			if f.handle(line) {
				quiet.Reset(every)
			}
		case <-quiet.C:
			f.running()
			quiet.Reset(every)
		}
	}
}
