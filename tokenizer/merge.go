package tokenizer

import (
	"container/heap"
)

type symbol struct {
	id         int32
	n          int // bytes; 0: merged away
	prev, next int
}

type mergeItem struct {
	rank int32
	pos  int
	id   int32
}

type mergeHeap []mergeItem

func (h mergeHeap) Len() int { return len(h) }

func (h mergeHeap) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}

func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *mergeHeap) Push(x any) { *h = append(*h, x.(mergeItem)) }

func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (t *BPE) mergeAll(syms []symbol) []int32 {
	for i := range syms {
		syms[i].prev, syms[i].next = i-1, i+1
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	h := make(mergeHeap, 0, len(syms))
	for i := 0; i+1 < len(syms); i++ {
		if m, ok := t.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h = append(h, mergeItem{m.rank, i, m.id})
		}
	}
	heap.Init(&h)
	for h.Len() > 0 {
		top := heap.Pop(&h).(mergeItem)
		cur := &syms[top.pos]
		if cur.n == 0 || cur.next < 0 {
			continue
		}
		right := syms[cur.next]
		if m, ok := t.merges[pairKey(cur.id, right.id)]; !ok || m.id != top.id {
			continue // a stale entry: one of the pair merged since
		}
		cur.id, cur.n = top.id, cur.n+right.n
		syms[cur.next].n = 0
		cur.next = right.next
		if right.next >= 0 {
			syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if m, ok := t.merges[pairKey(syms[cur.prev].id, cur.id)]; ok {
				heap.Push(&h, mergeItem{m.rank, cur.prev, m.id})
			}
		}
		if cur.next >= 0 {
			if m, ok := t.merges[pairKey(cur.id, syms[cur.next].id)]; ok {
				heap.Push(&h, mergeItem{m.rank, top.pos, m.id})
			}
		}
	}
	ids := make([]int32, 0, len(syms))
	for _, s := range syms {
		if s.n > 0 {
			ids = append(ids, s.id)
		}
	}
	return ids
}
