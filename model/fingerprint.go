package model

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
)

// Fingerprint is a sha256 of the model's configuration and every parameter's
// bits: two models with equal fingerprints compute the same function, so a
// result that depends only on the model (an evaluation) can be reused.
func (m *Model) Fingerprint() ([32]byte, error) {
	host := make([]float32, m.lo.total)
	m.be.Download(host, m.params)
	if err := m.be.Sync(); err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	cfg, err := json.Marshal(m.Cfg.toHF())
	if err != nil {
		return [32]byte{}, err
	}
	h.Write(cfg)
	buf := make([]byte, 4*4096)
	for len(host) > 0 {
		n := min(len(host), 4096)
		for i, v := range host[:n] {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		h.Write(buf[:4*n])
		host = host[n:]
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum, nil
}
