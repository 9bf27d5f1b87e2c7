// Package faultproxy is a TCP proxy that tests put in front of a server
// (PostgreSQL, NATS) to make the network fail the ways it does in
// production, while the server itself keeps running:
//
//   - Silence: the connections open now stop answering both ways, their
//     sockets open (a NAT or a proxy that lost its state), while new
//     connections work.
//   - Freeze: every connection, open now or made later, is silenced (a
//     server stopped with SIGSTOP whose port still accepts).
//   - Partition / Heal: nothing is forwarded or read on any connection, so
//     socket buffers fill and writers block (a failed link), until Heal.
//   - Down / Up: new connections are refused and open ones closed (the
//     server unreachable), until Up listens again on the same port.
//
// It listens on a loopback port only and stops when the test ends.
//
//	p := faultproxy.Start(t, "127.0.0.1:5432")
//	db := open(p.DSN(t, dsn)) // the app's connections go through p
//	p.Silence()
package faultproxy

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy is a TCP proxy a test owns.
type Proxy struct {
	addr, target string

	mu     sync.Mutex
	ln     net.Listener          // nil while Down
	conns  map[net.Conn]struct{} // both sides of every open connection
	pairs  []*atomic.Bool        // per connection: silenced
	frozen bool                  // new connections start silenced
	gate   chan struct{}         // closed while the proxy forwards (not partitioned)
	wg     sync.WaitGroup
}

// Start proxies a loopback port to target (host:port); the proxy stops,
// closing every connection, when t ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{addr: ln.Addr().String(), target: target, conns: map[net.Conn]struct{}{}, gate: make(chan struct{})}
	close(p.gate)
	p.serve(ln)
	t.Cleanup(func() {
		p.Heal()
		p.Down()
		p.wg.Wait()
	})
	return p
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			silent := new(atomic.Bool)
			p.mu.Lock()
			if p.ln != ln { // Down meanwhile
				p.mu.Unlock()
				c.Close()
				s.Close()
				continue
			}
			silent.Store(p.frozen)
			p.pairs = append(p.pairs, silent)
			p.conns[c], p.conns[s] = struct{}{}, struct{}{}
			p.mu.Unlock()
			p.wg.Add(2)
			go p.pipe(c, s, silent)
			go p.pipe(s, c, silent)
		}
	}()
}

// pipe copies from src to dst until either ends; once silent, what it
// reads goes nowhere.
func (p *Proxy) pipe(src, dst net.Conn, silent *atomic.Bool) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		p.mu.Lock()
		gate := p.gate
		p.mu.Unlock()
		<-gate // while partitioned, read nothing
		n, err := src.Read(buf)
		if n > 0 && !silent.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	src.Close()
	dst.Close()
	p.mu.Lock()
	delete(p.conns, src)
	delete(p.conns, dst)
	p.mu.Unlock()
}

// Silence makes every connection open now stop answering, both ways, and
// says how many there are.
func (p *Proxy) Silence() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.pairs {
		s.Store(true)
	}
	return len(p.pairs)
}

// Freeze silences every connection, open now or made later.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
	p.Silence()
}

// Partition stops forwarding on every connection, open now or made later,
// without reading what either side sends, until Heal. A read under way
// forwards what it gets; the next waits.
func (p *Proxy) Partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
	default: // partitioned already
	}
}

// Heal ends a partition.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}

// Down stops listening (new connections are refused) and closes every
// connection open through the proxy, until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Up listens again, on the same port, after Down.
func (p *Proxy) Up(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("faultproxy: listening again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

// Addr returns the host:port of the proxy.
func (p *Proxy) Addr() string { return p.addr }

// DSN returns a PostgreSQL dsn (URL or key=value form) pointed at the
// proxy.
func (p *Proxy) DSN(dsn string) string {
	host, port, _ := net.SplitHostPort(p.addr)
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return dsn + " host=" + host + " port=" + port // key=value: the last one counts
	}
	u.Host = p.addr
	return u.String()
}
