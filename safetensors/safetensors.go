package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"github.com/corl-project/corl/internal/narrow"
)

// DType is a tensor element type.
type DType string

// Element types corl reads and writes.
const (
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	F64  DType = "F64"
)

// Size is the element size in bytes, 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case F32:
		return 4
	case F16, BF16:
		return 2
	case F64:
		return 8
	}
	return 0
}

// maxHeader bounds the JSON header (the reference implementation uses 100 MB).
const maxHeader = 100 << 20

// Info describes one tensor.
type Info struct {
	Name  string
	DType DType
	Shape []int
	begin int // byte offsets in the data section
	end   int
}

// Elements is the number of elements.
func (i Info) Elements() int {
	n := 1
	for _, d := range i.Shape {
		n *= d
	}
	return n
}

// File is a parsed safetensors file held in memory.
type File struct {
	Metadata map[string]string
	infos    map[string]Info
	data     []byte
	header   []byte // as stored, padding included
}

type headerEntry struct {
	DType       DType   `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// ReadFile parses the safetensors file at path.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse validates and indexes a safetensors file held in data (not copied).
func Parse(data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("truncated: %d bytes, need at least the 8-byte header length", len(data))
	}
	hlen := binary.LittleEndian.Uint64(data[:8])
	if hlen > maxHeader {
		return nil, fmt.Errorf("header length %d exceeds the %d-byte limit", hlen, maxHeader)
	}
	if hlen > uint64(len(data)-8) {
		return nil, fmt.Errorf("truncated: header says %d bytes, file has %d after the length", hlen, len(data)-8)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+hlen], &raw); err != nil {
		return nil, fmt.Errorf("header is not a JSON object: %w", err)
	}
	body := data[8+hlen:]
	f := &File{infos: map[string]Info{}, data: body, header: data[8 : 8+hlen]}
	var infos []Info
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("__metadata__: want an object of strings: %w", err)
			}
			continue
		}
		var e headerEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		info, err := checkEntry(name, e, len(body))
		if err != nil {
			return nil, err
		}
		f.infos[name] = info
		infos = append(infos, info)
	}
	// No overlaps and no holes: sorted by start, each tensor begins where the
	// previous one ended, and the last ends at the end of the data.
	sort.Slice(infos, func(i, j int) bool {
		if infos[i].begin != infos[j].begin {
			return infos[i].begin < infos[j].begin
		}
		return infos[i].Name < infos[j].Name
	})
	at := 0
	for _, in := range infos {
		if in.begin < at {
			return nil, fmt.Errorf("tensor %q: bytes [%d, %d) overlap the previous tensor (which ends at %d)", in.Name, in.begin, in.end, at)
		}
		if in.begin > at {
			return nil, fmt.Errorf("tensor %q: hole in the data before byte %d (previous tensor ends at %d)", in.Name, in.begin, at)
		}
		at = in.end
	}
	if at != len(body) {
		return nil, fmt.Errorf("data section has %d bytes, tensors cover %d", len(body), at)
	}
	return f, nil
}

func checkEntry(name string, e headerEntry, dataLen int) (Info, error) {
	size := e.DType.Size()
	if size == 0 {
		return Info{}, fmt.Errorf("tensor %q: dtype %q is not supported (F32, F16, BF16, F64)", name, e.DType)
	}
	if len(e.DataOffsets) != 2 {
		return Info{}, fmt.Errorf("tensor %q: data_offsets needs 2 values, has %d", name, len(e.DataOffsets))
	}
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	if begin < 0 || end < begin || end > int64(dataLen) {
		return Info{}, fmt.Errorf("tensor %q: data_offsets [%d, %d] outside the %d data bytes", name, begin, end, dataLen)
	}
	n := int64(1)
	shape := make([]int, len(e.Shape))
	for i, d := range e.Shape {
		if d < 0 {
			return Info{}, fmt.Errorf("tensor %q: negative dimension %d", name, d)
		}
		if d > 0 && n > math.MaxInt32/d {
			return Info{}, fmt.Errorf("tensor %q: shape %v is too large", name, e.Shape)
		}
		n *= d
		shape[i] = int(d)
	}
	if n*int64(size) != end-begin {
		return Info{}, fmt.Errorf("tensor %q: shape %v of %s needs %d bytes, data_offsets give %d", name, e.Shape, e.DType, n*int64(size), end-begin)
	}
	return Info{Name: name, DType: e.DType, Shape: shape, begin: int(begin), end: int(end)}, nil
}

// Infos lists the tensors sorted by name.
func (f *File) Infos() []Info {
	out := make([]Info, 0, len(f.infos))
	for _, in := range f.infos {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Info returns one tensor's description.
func (f *File) Info(name string) (Info, bool) {
	in, ok := f.infos[name]
	return in, ok
}

// Float32 returns the named tensor converted to float32.
func (f *File) Float32(name string) ([]float32, error) {
	in, ok := f.infos[name]
	if !ok {
		return nil, fmt.Errorf("no tensor %q", name)
	}
	b := f.data[in.begin:in.end]
	out := make([]float32, in.Elements())
	switch in.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case BF16:
		for i := range out {
			out[i] = narrow.FromBF16(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case F16:
		for i := range out {
			out[i] = narrow.FromF16(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case F64:
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
		}
	}
	return out, nil
}

// Tensor is a tensor to write: float32 values stored as DType ("": F32).
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
	DType DType
}

// Write writes tensors (sorted by name, contiguous, each in its DType) with
// metadata, in NewLayout's layout.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	lo, err := NewLayout(tensors, metadata)
	if err != nil {
		return err
	}
	byName := make(map[string][]float32, len(tensors))
	for _, t := range tensors {
		byName[t.Name] = t.Data
	}
	return lo.Write(w, func(in Info) ([]float32, error) { return byName[in.Name], nil })
}

// NewLayout lays out a file of tensors (their Data unused): sorted by name,
// contiguous, each in its DType; the header is compact JSON without HTML
// escapes, __metadata__ first and then the tensors in data order, padded
// with spaces to a multiple of 8 bytes.
func NewLayout(tensors []Tensor, metadata map[string]string) (Layout, error) {
	ts := append([]Tensor(nil), tensors...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	var hj []byte
	hj = append(hj, '{')
	if len(metadata) > 0 {
		mj, err := marshal(metadata)
		if err != nil {
			return Layout{}, err
		}
		hj = append(append(hj, `"__metadata__":`...), mj...)
	}
	off := int64(0)
	var infos []Info
	for i, t := range ts {
		dt := cmp.Or(t.DType, F32)
		if dt.Size() == 0 {
			return Layout{}, fmt.Errorf("safetensors: tensor %q: dtype %q is not supported (F32, F16, BF16, F64)", t.Name, dt)
		}
		if i > 0 && ts[i-1].Name == t.Name {
			return Layout{}, fmt.Errorf("safetensors: tensor %q written twice", t.Name)
		}
		n := 1
		shape := make([]int64, len(t.Shape))
		for j, d := range t.Shape {
			n *= d
			shape[j] = int64(d)
		}
		size := int64(dt.Size() * n)
		ej, err := marshal(headerEntry{DType: dt, Shape: shape, DataOffsets: []int64{off, off + size}})
		if err != nil {
			return Layout{}, err
		}
		nj, _ := marshal(t.Name)
		if len(hj) > 1 {
			hj = append(hj, ',')
		}
		hj = append(append(append(hj, nj...), ':'), ej...)
		infos = append(infos, Info{Name: t.Name, DType: dt, Shape: t.Shape, begin: int(off), end: int(off + size)})
		off += size
	}
	hj = append(hj, '}')
	for len(hj)%8 != 0 { // pad with spaces so the data is 8-byte aligned
		hj = append(hj, ' ')
	}
	return Layout{header: hj, infos: infos}, nil
}

// marshal is compact JSON with <, > and & as they are.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Layout is a safetensors file without its data: the header exactly as
// stored (key order, spacing and padding included) and the tensors in data
// order. Written back with new values, it gives a file that differs from the
// original in those values alone, whatever program wrote the original.
type Layout struct {
	header []byte
	infos  []Info
}

// Layout returns the file's layout (the header is copied, so the file's
// data may be dropped).
func (f *File) Layout() Layout {
	infos := f.Infos()
	sort.SliceStable(infos, func(i, j int) bool { return infos[i].begin < infos[j].begin })
	return Layout{header: append([]byte(nil), f.header...), infos: infos}
}

// Infos lists the layout's tensors in data order.
func (l Layout) Infos() []Info { return l.infos }

// Bytes is the size of the file the layout describes.
func (l Layout) Bytes() int64 {
	n := int64(8 + len(l.header))
	if k := len(l.infos); k > 0 {
		n += int64(l.infos[k-1].end)
	}
	return n
}

// Write writes the file: the header as stored, then each tensor's values
// from values (called once per tensor, in data order), encoded in the
// tensor's dtype. F16 and BF16 round to nearest with ties to even, so
// values read from such a file are written back bit for bit.
func (l Layout) Write(w io.Writer, values func(Info) ([]float32, error)) error {
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(l.header)))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return err
	}
	if _, err := w.Write(l.header); err != nil {
		return err
	}
	buf := make([]byte, 0, 1<<16)
	flush := func() error {
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	for _, in := range l.infos {
		data, err := values(in)
		if err != nil {
			return err
		}
		if len(data) != in.Elements() {
			return fmt.Errorf("safetensors: tensor %q: shape %v holds %d values, data has %d", in.Name, in.Shape, in.Elements(), len(data))
		}
		for _, v := range data {
			switch in.DType {
			case F32:
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			case BF16:
				buf = binary.LittleEndian.AppendUint16(buf, narrow.BF16(v))
			case F16:
				buf = binary.LittleEndian.AppendUint16(buf, narrow.F16(v))
			case F64:
				buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(float64(v)))
			}
			if len(buf) >= 1<<16 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}
