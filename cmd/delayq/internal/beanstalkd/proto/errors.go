package proto

// Error is a reply line that reports a failure; it is written as its text followed by CRLF.
type Error string

func (e Error) Error() string { return string(e) }

// The error replies of beanstalkd 1.12. The first four come from the parser and leave the
// connection usable; the rest come from carrying a command out.
const (
	ErrBadFormat      Error = "BAD_FORMAT"
	ErrUnknownCommand Error = "UNKNOWN_COMMAND"
	ErrExpectedCRLF   Error = "EXPECTED_CRLF"
	ErrJobTooBig      Error = "JOB_TOO_BIG"
	ErrDraining       Error = "DRAINING"
	ErrNotFound       Error = "NOT_FOUND"
	ErrNotIgnored     Error = "NOT_IGNORED"
	ErrDeadlineSoon   Error = "DEADLINE_SOON"
	ErrTimedOut       Error = "TIMED_OUT"
	ErrOutOfMemory    Error = "OUT_OF_MEMORY"
	ErrInternal       Error = "INTERNAL_ERROR"
)
