package apiv1

import (
	"bytes"
	"encoding/json"
)

// Marshal encodes v as delayq writes its answers and webhook bodies: like json.Marshal, but
// with HTML characters left as they are, so that a job's body comes back as it was sent.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
