package dnstest

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// Server is a running test DNS server.
type Server struct {
	conn    net.PacketConn
	answer  func(name string) netip.Addr
	queries atomic.Int64
	wg      sync.WaitGroup
}

// Start serves A queries on 127.0.0.1 until the test ends. answer gets the
// queried name (fully qualified, with the trailing dot) and returns the
// IPv4 address to answer with; an invalid address answers NXDOMAIN. AAAA
// and other queries get an empty answer, so resolvers fall back to A.
func Start(t testing.TB, answer func(name string) netip.Addr) *Server {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("dnstest: listen: %v", err)
	}
	s := &Server{conn: conn, answer: answer}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(func() {
		_ = conn.Close()
		s.wg.Wait()
	})
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.conn.LocalAddr().String() }

// Queries is how many A queries the server answered.
func (s *Server) Queries() int64 { return s.queries.Load() }

// Resolver returns a resolver that asks only this server.
func (s *Server) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", s.Addr())
	}}
}

func (s *Server) serve() {
	defer s.wg.Done()
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp, ok := s.reply(buf[:n]); ok {
			_, _ = s.conn.WriteTo(resp, from)
		}
	}
}

func (s *Server) reply(req []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	var addr netip.Addr
	if q.Type == dnsmessage.TypeA {
		s.queries.Add(1)
		addr = s.answer(q.Name.String())
		if !addr.IsValid() || !addr.Is4() {
			rh.RCode = dnsmessage.RCodeNameError
		}
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, false
	}
	if err := b.Question(q); err != nil {
		return nil, false
	}
	if err := b.StartAnswers(); err != nil {
		return nil, false
	}
	if q.Type == dnsmessage.TypeA && addr.IsValid() && addr.Is4() {
		if err := b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}, dnsmessage.AResource{A: addr.As4()}); err != nil {
			return nil, false
		}
	}
	out, err := b.Finish()
	return out, err == nil
}
