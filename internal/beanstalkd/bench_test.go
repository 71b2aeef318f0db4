package beanstalkd

import (
	"testing"
	"time"

	"github.com/beanstalkd/go-beanstalk"
)

// BenchmarkPutReserveDelete runs one job's life over one connection to a server on the delayq
// Backend: put, reserve, delete, each waiting for its reply (go test -bench PutReserveDelete
// -cpuprofile cpu.out ./internal/beanstalkd/ shows where the time goes).
func BenchmarkPutReserveDelete(b *testing.B) {
	c, err := beanstalk.Dial("tcp", startServer(b, Config{Backend: newDelayqBackend(b)}))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	body := make([]byte, 100)
	watch := beanstalk.NewTubeSet(c, "default")
	for b.Loop() {
		if _, err := c.Put(body, 1024, 0, time.Minute); err != nil {
			b.Fatal(err)
		}
		id, _, err := watch.Reserve(time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Delete(id); err != nil {
			b.Fatal(err)
		}
	}
}
