// Package delayqtest helps test code that uses delayq, against a real Redis and without
// sleeping:
//
//   - NewRedis and NewClient start a throwaway redis-server for one test (redis-server must be
//     on PATH; a test that cannot start one fails, saying how to install it).
//   - Enqueued, RequireEnqueued and RequireNotEnqueued check what code under test enqueued.
//   - Drain runs the due jobs of a topic through a Handler, one by one, settling each as a
//     Worker would, and says which were acked, retried and sent to the dead letters.
//   - AdvanceClock moves the clock a Client's operations see, so that a delayed job, a retry
//     or an expired lease comes due at once.
//
// Everything here fails the test through its testing.TB instead of returning errors. It is
// meant for tests only: see AdvanceClock for what moving the clock does and does not reach.
package delayqtest
