package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"
)

func sample() ([]KV, []Tensor) {
	kvs := []KV{
		{"general.architecture", "llama"},
		{"llama.block_count", uint32(2)},
		{"llama.rope.freq_base", float32(10000)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
		{"n", int32(-3)},
		{"big", uint64(1) << 40},
		{"flag", true},
		{"tokenizer.ggml.tokens", []string{"a", "", "ǅ"}},
		{"tokenizer.ggml.token_type", []int32{1, 3, 6}},
		{"tokenizer.ggml.scores", []float32{0, -1.5, float32(math.Inf(-1))}},
	}
	ts := []Tensor{
		{Name: "w", Dims: []uint64{3, 2}, Data: []float32{1, 2, 3, 4, 5, 6}},
		{Name: "b", Dims: []uint64{1}, Data: []float32{-0.25}},
		{Name: "e", Dims: []uint64{9}, Data: []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}},
	}
	return kvs, ts
}

func TestRoundTrip(t *testing.T) {
	kvs, ts := sample()
	var buf bytes.Buffer
	if err := Write(&buf, kvs, ts); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.KVs, kvs) {
		t.Errorf("metadata: got %v, want %v", f.KVs, kvs)
	}
	if !reflect.DeepEqual(f.Tensors, ts) {
		t.Errorf("tensors: got %v, want %v", f.Tensors, ts)
	}
	if got := f.Get("llama.block_count"); got != uint32(2) {
		t.Errorf("Get: %v", got)
	}
	if b, ok := f.Tensor("b"); !ok || b.Data[0] != -0.25 {
		t.Errorf("Tensor(b): %v %v", b, ok)
	}
}

// TestLayout checks the bytes of a one-key, one-tensor file against the
// format as gguf.h spells it, written out by hand.
func TestLayout(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, []KV{{"k", uint32(7)}}, []Tensor{{Name: "t", Dims: []uint64{2}, Data: []float32{1, -2}}}); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	var want []byte
	want = append(want, "GGUF"...)
	want = le.AppendUint32(want, 3)
	want = le.AppendUint64(want, 1) // tensors
	want = le.AppendUint64(want, 1) // kvs
	want = le.AppendUint64(want, 1)
	want = append(want, 'k')
	want = le.AppendUint32(want, 4) // GGUF_TYPE_UINT32
	want = le.AppendUint32(want, 7)
	want = le.AppendUint64(want, 1)
	want = append(want, 't')
	want = le.AppendUint32(want, 1) // n_dims
	want = le.AppendUint64(want, 2)
	want = le.AppendUint32(want, 0) // GGML_TYPE_F32
	want = le.AppendUint64(want, 0) // offset
	for len(want)%32 != 0 {
		want = append(want, 0)
	}
	want = le.AppendUint32(want, math.Float32bits(1))
	want = le.AppendUint32(want, math.Float32bits(-2))
	for len(want)%32 != 0 {
		want = append(want, 0)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("bytes:\n got %x\nwant %x", buf.Bytes(), want)
	}
}

func TestWriteRefusesMismatchedDims(t *testing.T) {
	err := Write(&bytes.Buffer{}, nil, []Tensor{{Name: "w", Dims: []uint64{2, 2}, Data: []float32{1, 2, 3}}})
	if err == nil {
		t.Fatal("dims holding 4 values over 3 were written")
	}
	if err := Write(&bytes.Buffer{}, []KV{{"x", 1.5}}, nil); err == nil {
		t.Fatal("a float64 value was written")
	}
}

// TestParseTruncated parses every prefix of a valid file: each must be an
// ErrFormat (none panics or reads past the end).
func TestParseTruncated(t *testing.T) {
	kvs, ts := sample()
	var buf bytes.Buffer
	if err := Write(&buf, kvs, ts); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	// The last tensor ends before the final padding.
	end := len(b) - (32 - 9*4%32)
	for n := 0; n < end; n++ {
		if _, err := Parse(b[:n]); !errors.Is(err, ErrFormat) {
			t.Fatalf("prefix of %d bytes (of %d): err %v, want ErrFormat", n, len(b), err)
		}
	}
}

func FuzzParse(f *testing.F) {
	kvs, ts := sample()
	var buf bytes.Buffer
	if err := Write(&buf, kvs, ts); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := Write(&out, file.KVs, file.Tensors); err != nil {
			t.Fatalf("a parsed file does not write back: %v", err)
		}
	})
}
