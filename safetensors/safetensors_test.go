package safetensors

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestRoundTripBitwise(t *testing.T) {
	ts := []Tensor{
		{Name: "b", Shape: []int{2, 3}, Data: []float32{1, -2, float32(math.Inf(1)), 3.5e-40, 0, -0}},
		{Name: "a", Shape: []int{}, Data: []float32{42}},
		{Name: "empty", Shape: []int{0, 4}, Data: nil},
	}
	var buf bytes.Buffer
	if err := Write(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" {
		t.Fatalf("metadata = %v", f.Metadata)
	}
	for _, want := range ts {
		got, err := f.Float32(want.Name)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want.Data {
			if math.Float32bits(got[i]) != math.Float32bits(want.Data[i]) {
				t.Fatalf("%s[%d] = %v, want %v", want.Name, i, got[i], want.Data[i])
			}
		}
		in, _ := f.Info(want.Name)
		if !reflect.DeepEqual(in.Shape, want.Shape) && len(want.Shape) > 0 {
			t.Fatalf("%s shape %v, want %v", want.Name, in.Shape, want.Shape)
		}
	}
	if (8+binary.LittleEndian.Uint64(buf.Bytes()))%8 != 0 {
		t.Fatal("data section is not 8-byte aligned")
	}
}

// file builds a safetensors byte string from a literal header and data.
func file(header string, data []byte) []byte {
	var b []byte
	b = binary.LittleEndian.AppendUint64(b, uint64(len(header)))
	return append(append(b, header...), data...)
}

func TestHostileInputs(t *testing.T) {
	eight := make([]byte, 8)
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"short", []byte{1, 2}, "truncated"},
		{"huge header", binary.LittleEndian.AppendUint64(nil, 1<<40), "exceeds"},
		{"header past end", binary.LittleEndian.AppendUint64(nil, 100), "truncated"},
		{"not json", file("nope", nil), "JSON"},
		{"bad dtype", file(`{"x":{"dtype":"I4","shape":[1],"data_offsets":[0,4]}}`, eight[:4]), "dtype"},
		{"offsets past data", file(`{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, eight), "outside"},
		{"reversed offsets", file(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}}`, eight), "outside"},
		{"shape mismatch", file(`{"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, eight), "needs 12 bytes"},
		{"negative dim", file(`{"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, eight), "negative"},
		{"overflowing shape", file(`{"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, eight), "too large"},
		{"overlap", file(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, eight), "overlap"},
		{"hole", file(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, eight), "hole"},
		{"trailing bytes", file(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, eight), "cover"},
		{"one offset", file(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[0]}}`, eight[:4]), "data_offsets"},
		{"bad metadata", file(`{"__metadata__":{"a":1}}`, nil), "__metadata__"},
	} {
		_, err := Parse(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
}

func TestReadsHalfPrecision(t *testing.T) {
	// bf16 1.5 = 0x3FC0; f16 -2.0 = 0xC000, f16 smallest subnormal = 0x0001
	data := []byte{0xC0, 0x3F, 0x00, 0xC0, 0x01, 0x00}
	f, err := Parse(file(`{"b":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]},"h":{"dtype":"F16","shape":[2],"data_offsets":[2,6]}}`, data))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.Float32("b")
	h, _ := f.Float32("h")
	if b[0] != 1.5 || h[0] != -2 || h[1] != float32(math.Pow(2, -24)) {
		t.Fatalf("bf16 %v, f16 %v", b, h)
	}
}

// FuzzParse: arbitrary bytes never panic, and whatever parses can be read.
func FuzzParse(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, []Tensor{{Name: "w", Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}}, {Name: "b", Shape: []int{2}, Data: []float32{5, 6}}}, map[string]string{"k": "v"})
	f.Add(buf.Bytes())
	f.Add(file(`{"x":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}`, []byte{1, 2}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := Parse(data)
		if err != nil {
			return
		}
		for _, in := range pf.Infos() {
			v, err := pf.Float32(in.Name)
			if err != nil || len(v) != in.Elements() {
				t.Fatalf("parsed tensor %q unreadable: %v", in.Name, err)
			}
		}
	})
}

// TestLayoutRewritesAForeignFileByteForByte: a file whose header another
// writer laid out (keys out of data order, spaces, __metadata__ last, data
// in BF16, F16 and F32) is written back from the values read from it, bit
// for bit, and a changed value changes that tensor's bytes alone.
func TestLayoutRewritesAForeignFileByteForByte(t *testing.T) {
	var data []byte
	bf := []uint16{0x3f80, 0xc049, 0x0001, 0x7f80, 0x8000, 0x3c00} // 1, -3.14, a subnormal, +Inf, -0, 2^-7
	for _, h := range bf {
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	hf := []uint16{0x3c00, 0x0001, 0xfbff, 0x7c00} // 1, the smallest subnormal, -65504, +Inf
	for _, h := range hf {
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	data = binary.LittleEndian.AppendUint32(data, math.Float32bits(-2.5))
	header := `{ "z.f32": {"dtype": "F32", "shape": [1], "data_offsets": [20, 24]},
  "a.bf16": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]},
  "m.f16": {"dtype": "F16", "shape": [4], "data_offsets": [12, 20]},
  "__metadata__": {"format": "pt", "note": "<&>"} }  `
	orig := file(header, data)
	f, err := Parse(orig)
	if err != nil {
		t.Fatal(err)
	}
	lo := f.Layout()
	if lo.Bytes() != int64(len(orig)) {
		t.Fatalf("layout of %d bytes, file has %d", lo.Bytes(), len(orig))
	}
	var names []string
	for _, in := range lo.Infos() {
		names = append(names, in.Name)
	}
	if strings.Join(names, " ") != "a.bf16 m.f16 z.f32" {
		t.Fatalf("data order %v", names)
	}
	rewrite := func(change string) []byte {
		var out bytes.Buffer
		err := lo.Write(&out, func(in Info) ([]float32, error) {
			v, err := f.Float32(in.Name)
			if in.Name == change {
				v[0] = 7
			}
			return v, err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	if got := rewrite(""); !bytes.Equal(got, orig) {
		t.Fatalf("rewritten file differs:\n%q\n%q", got, orig)
	}
	got := rewrite("m.f16")
	hdr := len(orig) - len(data)
	for i := range orig {
		if got[i] != orig[i] && (i < hdr+12 || i >= hdr+14) {
			t.Fatalf("byte %d changed: only m.f16's first value should", i)
		}
	}
	if bytes.Equal(got, orig) {
		t.Fatal("a changed value left the file unchanged")
	}
}

// TestWriteRoundsToHalfFormats: BF16 and F16 tensors are stored rounded to
// nearest, ties to even, and read back as the rounded values.
func TestWriteRoundsToHalfFormats(t *testing.T) {
	tie := math.Float32frombits(0x3f808000) // halfway between two bfloat16s; even is 0x3f80
	ts := []Tensor{{Name: "b", Shape: []int{2}, Data: []float32{tie, 1.0 / 3}, DType: BF16},
		{Name: "h", Shape: []int{2}, Data: []float32{1.0 / 3, 1e-8}, DType: F16}}
	var buf bytes.Buffer
	if err := Write(&buf, ts, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.Float32("b")
	h, _ := f.Float32("h")
	if b[0] != 1 || b[1] != math.Float32frombits(0x3eab0000) {
		t.Errorf("bf16 read back %v (bits %#x), want 1 and 0x3eab0000", b, math.Float32bits(b[1]))
	}
	if h[0] != 0.333251953125 || h[1] != 0 {
		t.Errorf("f16 read back %v, want 0.333251953125 and 0 (1e-8 is below half the smallest subnormal)", h)
	}
	if in, _ := f.Info("h"); in.DType != F16 {
		t.Errorf("h stored as %s", in.DType)
	}
	if err := Write(&buf, []Tensor{{Name: "x", Shape: []int{1}, Data: []float32{1}, DType: "I8"}}, nil); err == nil || !strings.Contains(err.Error(), `"I8"`) {
		t.Errorf("dtype I8: err = %v", err)
	}
}
