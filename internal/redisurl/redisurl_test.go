package redisurl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url  string
		want Config
	}{
		{"redis://localhost", Config{Mode: Standalone, Network: "tcp", Addrs: []string{"localhost:6379"}, Redacted: "redis://localhost"}},
		{"redis://127.0.0.1:7000/3", Config{Mode: Standalone, Network: "tcp", Addrs: []string{"127.0.0.1:7000"}, DB: 3, Redacted: "redis://127.0.0.1:7000/3"}},
		{"redis://u:p%40ss@h:1?db=2&dial_timeout=2s&read_timeout=3s&write_timeout=4s&pool_size=7&client_name=dq", Config{
			Mode: Standalone, Network: "tcp", Addrs: []string{"h:1"}, Username: "u", Password: "p@ss", DB: 2,
			DialTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 4 * time.Second, PoolSize: 7, ClientName: "dq",
			Redacted: "redis://u:xxxxx@h:1?client_name=dq&db=2&dial_timeout=2s&pool_size=7&read_timeout=3s&write_timeout=4s",
		}},
		{"redis://:secret@[::1]:6380", Config{Mode: Standalone, Network: "tcp", Addrs: []string{"[::1]:6380"}, Password: "secret", Redacted: "redis://:xxxxx@[::1]:6380"}},
		{"REDIS://h", Config{Mode: Standalone, Network: "tcp", Addrs: []string{"h:6379"}, Redacted: "redis://h"}},
		{"unix:///run/redis.sock?db=1", Config{Mode: Standalone, Network: "unix", Addrs: []string{"/run/redis.sock"}, DB: 1, Redacted: "unix:///run/redis.sock?db=1"}},
		{"redis+sentinel://s1,s2:26380,[::1]/mymaster?db=4&sentinel_password=sp", Config{
			Mode: Sentinel, Network: "tcp", Addrs: []string{"s1:26379", "s2:26380", "[::1]:26379"}, MasterName: "mymaster",
			DB: 4, SentinelPassword: "sp", Redacted: "redis+sentinel://s1,s2:26380,[::1]/mymaster?db=4&sentinel_password=xxxxx",
		}},
		{"redis+sentinel://u:p@s1/m/", Config{Mode: Sentinel, Network: "tcp", Addrs: []string{"s1:26379"}, MasterName: "m", Username: "u", Password: "p", Redacted: "redis+sentinel://u:xxxxx@s1/m/"}},
		{"redis+cluster://a:7000,b:7001,c", Config{Mode: Cluster, Network: "tcp", Addrs: []string{"a:7000", "b:7001", "c:6379"}, Redacted: "redis+cluster://a:7000,b:7001,c"}},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.url)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseTLS(t *testing.T) {
	t.Parallel()
	c, err := Parse("rediss://h:6390?insecure=true")
	if err != nil {
		t.Fatal(err)
	}
	if c.TLS == nil || !c.TLS.InsecureSkipVerify || c.TLS.ServerName != "h" {
		t.Errorf("TLS = %+v, want InsecureSkipVerify and ServerName h", c.TLS)
	}
	c, err = Parse("rediss+cluster://a,b?server_name=redis.example")
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != Cluster || c.TLS == nil || c.TLS.InsecureSkipVerify || c.TLS.ServerName != "redis.example" {
		t.Errorf("got mode %v TLS %+v", c.Mode, c.TLS)
	}
	c, err = Parse("redis://h")
	if err != nil || c.TLS != nil {
		t.Errorf("redis://h: TLS %+v, err %v; want no TLS", c.TLS, err)
	}

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("rediss://h?ca=" + bad); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("bad ca: err = %v", err)
	}
	if _, err := Parse("rediss://h?ca=" + filepath.Join(dir, "missing.pem")); !errors.Is(err, os.ErrNotExist) || !errors.Is(err, ErrInvalid) {
		t.Errorf("missing ca: err = %v, want ErrInvalid wrapping ErrNotExist", err)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url  string
		want string // in the message
	}{
		{"", "no scheme"},
		{"localhost:6379", "no scheme"},
		{"http://h", `unknown scheme "http"`},
		{"redis://", "host is missing"},
		{"redis://h:0", "port"},
		{"redis://h:99999", "port"},
		{"redis://h:abc", "port"},
		{"redis://::1", "brackets"},
		{"redis://[::1", "missing ]"},
		{"redis://h/x", `database "x"`},
		{"redis://h/1/2", "at most a database number"},
		{"redis://h?db=-1", "database"},
		{"redis://a,b", "names 2 hosts"},
		{"redis://h?bogus=1", `unknown parameter "bogus"`},
		{"redis://h?insecure=true", `unknown parameter "insecure"`},
		{"redis://h?dial_timeout=soon", "not a duration"},
		{"redis://h?pool_size=0", "pool_size"},
		{"redis://h?db=1&db=2", "given 2 times"},
		{"redis://h#frag", "fragment"},
		{"rediss://h?insecure=maybe", "not true or false"},
		{"redis+sentinel://s1", "master name"},
		{"redis+sentinel://s1/a/b", "master name"},
		{"redis+sentinel://s1,,s2/m", "empty host"},
		{"redis+cluster://a/0", "takes no path"},
		{"redis+cluster://a?db=1", "only database 0"},
		{"redis+cluster://a?sentinel_password=x", "unknown parameter"},
		{"unix://", "socket path is missing"},
		{"unix://host/sock", "unix:///path"},
		{"redis://u:p@h:1:2", "brackets"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.url)
			if err == nil {
				t.Fatalf("Parse(%q) = nil error, want one containing %q", tt.url, tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestErrorsHidePasswords(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"redis://user:hunter2@h:notaport",
		"redis://user:hunter2@h?bogus=1",
		"redis+sentinel://user:hunter2@h/m?sentinel_password=hunter2&bogus=1",
		"bogus://user:hunter2@h",
		"user:hunter2@h",
	} {
		_, err := Parse(u)
		if err == nil {
			t.Errorf("Parse(%q) succeeded", u)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Parse(%q) error shows the password: %v", u, err)
		}
	}
	c, err := Parse("redis+sentinel://user:hunter2@h/m?sentinel_password=hunter2")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.Redacted, "hunter2") {
		t.Errorf("Redacted = %q shows the password", c.Redacted)
	}
}

func TestConnectStandalone(t *testing.T) {
	t.Parallel()
	srv := redistest.Standalone(t)
	ctx := testContext(t)
	// The helper probes the server without a password, so the password is set after the start.
	if err := srv.Client(t).ConfigSet(ctx, "requirepass", "s3cret/pw").Err(); err != nil {
		t.Fatal(err)
	}
	rdb, err := NewClient("redis://:s3cret%2Fpw@" + srv.Addr + "/5?client_name=delayq-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	if _, ok := rdb.(*redis.Client); !ok {
		t.Fatalf("client is %T, want *redis.Client", rdb)
	}
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	name, err := rdb.ClientGetName(ctx).Result()
	if err != nil || name != "delayq-test" {
		t.Errorf("CLIENT GETNAME = %q, %v; want delayq-test", name, err)
	}
	// The key went to database 5.
	direct := redis.NewClient(&redis.Options{Addr: srv.Addr, Password: "s3cret/pw", DB: 5})
	t.Cleanup(func() { _ = direct.Close() })
	if v, err := direct.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Errorf("GET k in db 5 = %q, %v", v, err)
	}

	wrong, err := NewClient("redis://:wrong@" + srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wrong.Close() })
	if err := wrong.Ping(ctx).Err(); err == nil {
		t.Error("PING with a wrong password succeeded")
	}
}

// The parsed settings reach the go-redis options of each kind of client.
func TestNewClientOptions(t *testing.T) {
	t.Parallel()
	const q = "?dial_timeout=2s&read_timeout=3s&write_timeout=4s&pool_size=7&client_name=n"
	simple := func(t *testing.T, rdb redis.UniversalClient) *redis.Options {
		c, ok := rdb.(*redis.Client)
		if !ok {
			t.Fatalf("client is %T, want *redis.Client", rdb)
		}
		return c.Options()
	}
	t.Run("tcp", func(t *testing.T) {
		rdb, err := NewClient("redis://u:p@h:1/3" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer rdb.Close()
		o := simple(t, rdb)
		got := []any{o.Network, o.Addr, o.Username, o.Password, o.DB, o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolSize, o.ClientName, o.ContextTimeoutEnabled}
		want := []any{"tcp", "h:1", "u", "p", 3, 2 * time.Second, 3 * time.Second, 4 * time.Second, 7, "n", true}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("options (-want +got):\n%s", diff)
		}
	})
	t.Run("unix", func(t *testing.T) {
		rdb, err := NewClient("unix:///run/redis.sock?db=2")
		if err != nil {
			t.Fatal(err)
		}
		defer rdb.Close()
		o := simple(t, rdb)
		if o.Network != "unix" || o.Addr != "/run/redis.sock" || o.DB != 2 {
			t.Errorf("options: network %q, addr %q, db %d; want unix, /run/redis.sock, 2", o.Network, o.Addr, o.DB)
		}
	})
	t.Run("cluster", func(t *testing.T) {
		rdb, err := NewClient("redis+cluster://u:p@a:1,b:2" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer rdb.Close()
		c, ok := rdb.(*redis.ClusterClient)
		if !ok {
			t.Fatalf("client is %T, want *redis.ClusterClient", rdb)
		}
		o := c.Options()
		got := []any{o.Addrs, o.Username, o.Password, o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolSize, o.ClientName, o.ContextTimeoutEnabled}
		want := []any{[]string{"a:1", "b:2"}, "u", "p", 2 * time.Second, 3 * time.Second, 4 * time.Second, 7, "n", true}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("options (-want +got):\n%s", diff)
		}
	})
}

func TestConnectCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.NewCluster(t, 3, 0)
	addrs := cl.Addrs()
	rdb, err := NewClient("redis+cluster://" + strings.Join(addrs[:2], ","))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("client is %T, want *redis.ClusterClient", rdb)
	}
	ctx := testContext(t)
	for i := range 30 {
		key := "key" + string(rune('a'+i))
		if err := cc.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
	}
	// Keys spread over shards: more than one primary holds some.
	var holding atomic.Int32
	err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		n, err := c.DBSize(ctx).Result()
		if n > 0 {
			holding.Add(1)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if holding := holding.Load(); holding < 2 {
		t.Errorf("%d primaries hold keys, want the keys spread over several", holding)
	}
}

func TestConnectSentinel(t *testing.T) {
	t.Parallel()
	s := redistest.NewSentinel(t)
	var sentinels []string
	for _, sn := range s.Sentinels {
		sentinels = append(sentinels, sn.Addr)
	}
	rdb, err := NewClient("redis+sentinel://" + strings.Join(sentinels, ",") + "/" + s.MasterName + "?db=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := testContext(t)
	if err := rdb.Set(ctx, "k", "through-sentinel", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The write reached the primary, in database 2.
	direct := redis.NewClient(&redis.Options{Addr: s.Primary.Addr, DB: 2})
	t.Cleanup(func() { _ = direct.Close() })
	if v, err := direct.Get(ctx, "k").Result(); err != nil || v != "through-sentinel" {
		t.Errorf("GET k on the primary = %q, %v", v, err)
	}

	unknown, err := NewClient("redis+sentinel://" + sentinels[0] + "/nosuchmaster")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unknown.Close() })
	if err := unknown.Ping(ctx).Err(); err == nil {
		t.Error("PING through an unknown master name succeeded")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"redis://u:p@h:1/2?db=3", "rediss://h?insecure=1", "unix:///s?db=1",
		"redis+sentinel://a,b:1/m?sentinel_password=x", "redis+cluster://[::1]:7000,b", "x", "redis://@",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q): error %v does not match ErrInvalid", s, err)
			}
			return
		}
		if len(c.Addrs) == 0 {
			t.Fatalf("Parse(%q) gave no address", s)
		}
		if c.Mode == Standalone && len(c.Addrs) != 1 {
			t.Fatalf("Parse(%q): standalone with %d addresses", s, len(c.Addrs))
		}
		if c.Password != "" && c.Password != "xxxxx" && strings.Contains(c.Redacted, ":"+c.Password+"@") {
			t.Fatalf("Parse(%q): Redacted %q shows the password", s, c.Redacted)
		}
	})
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
