package node

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// echoServer answers every connection with what it receives.
func echoServer(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func dial(t *testing.T, port int) net.Conn {
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestLinkDelay sends through two delayed links in a row to an echo server: a round trip
// crosses each link twice, bulk data is not slowed to a chunk per delay, bytes keep their order,
// and Cut and Heal still work on a delayed link.
func TestLinkDelay(t *testing.T) {
	const oneWay = 25 * time.Millisecond
	echo := echoServer(t)
	inner := newLink(t, 1, 2, echo)
	outer := newLink(t, 0, 1, inner.Port)
	inner.SetDelay(oneWay)
	outer.SetDelay(oneWay)
	c := dial(t, outer.Port)

	ping := make([]byte, 1)
	began := time.Now()
	_, err := c.Write(ping)
	require.NoError(t, err)
	_, err = io.ReadFull(c, ping)
	require.NoError(t, err)
	rtt := time.Since(began)
	require.GreaterOrEqual(t, rtt, 4*oneWay, "out and back through two links")
	t.Logf("round trip through two %s links: %s", oneWay, rtt)

	// 1 MiB is 32 reads of the links' 32 KiB buffer: delayed one after the other it would
	// take 32 × 100 ms; as a delay line it takes one round trip plus the copying.
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7 / 5)
	}
	got := make([]byte, len(data))
	began = time.Now()
	go func() { _, _ = c.Write(data) }()
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	took := time.Since(began)
	require.True(t, bytes.Equal(data, got), "bytes arrive whole and in order")
	require.Less(t, took, 700*time.Millisecond)
	t.Logf("1 MiB echoed through two %s links: %s", oneWay, took)

	outer.Cut()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = c.Read(ping)
	var ne net.Error
	require.Error(t, err)
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "a cut closes the connection at once, it does not hang")
	outer.Heal()
	c = dial(t, outer.Port)
	_, err = c.Write(ping)
	require.NoError(t, err)
	_, err = io.ReadFull(c, ping)
	require.NoError(t, err, "a healed link carries new connections")
}
