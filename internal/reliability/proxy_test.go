package reliability

import (
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// proxy is a TCP proxy the test owns, in front of the PostgreSQL server:
// silence makes the connections open at that moment stop answering (what
// each side sends is read and dropped, the sockets stay open, as behind a
// NAT or a proxy that lost its state, or before a hung server), while new
// connections work. partition stops it forwarding anything, on every
// connection, without reading: the socket buffers fill and writers block,
// as when a network link fails, until heal.
type proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	pairs  []*atomic.Bool // per connection: silenced
	frozen bool           // new connections start silenced
	gate   chan struct{}  // closed while the proxy forwards (not partitioned)
	wg     sync.WaitGroup
}

// startProxy proxies a loopback port to target (host:port); it stops when
// t ends.
func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, gate: make(chan struct{})}
	close(p.gate)
	var conns sync.Map
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			conns.Store(c, s)
			silent := new(atomic.Bool)
			p.mu.Lock()
			silent.Store(p.frozen)
			p.pairs = append(p.pairs, silent)
			p.mu.Unlock()
			p.wg.Add(2)
			go p.pipe(c, s, silent)
			go p.pipe(s, c, silent)
		}
	}()
	t.Cleanup(func() {
		p.heal()
		ln.Close()
		conns.Range(func(c, s any) bool {
			c.(net.Conn).Close()
			s.(net.Conn).Close()
			return true
		})
		p.wg.Wait()
	})
	return p
}

// pipe copies from src to dst until either ends; once silent, what it
// reads goes nowhere.
func (p *proxy) pipe(src, dst net.Conn, silent *atomic.Bool) {
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
}

// silence makes every connection open now stop answering, both ways, and
// says how many.
func (p *proxy) silence() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.pairs {
		s.Store(true)
	}
	return len(p.pairs)
}

// freeze silences every connection, open now or made later: a server
// that stopped answering (frozen with SIGSTOP, say) while its port still
// accepts connections.
func (p *proxy) freeze() {
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
	p.silence()
}

// partition stops forwarding on every connection, open now or made later,
// without reading what either side sends, until heal. A read under way
// forwards what it gets; the next waits.
func (p *proxy) partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
	default: // partitioned already
	}
}

// heal ends a partition.
func (p *proxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}

// addr returns the host:port of the proxy.
func (p *proxy) addr() string { return p.ln.Addr().String() }

// dsn returns dsn pointed at the proxy.
func (p *proxy) dsn(t *testing.T, dsn string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(p.ln.Addr().String())
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return dsn + " host=" + host + " port=" + port // key=value: the last one counts
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// serverOf returns the host:port of dsn's server.
func serverOf(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parse DSN: %v", err)
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}
