package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// trie finds added tokens leftmost-longest, as the library's Aho-Corasick
// automaton does.
type trie struct {
	next  map[byte]*trie
	token *addedToken
}

func newTrie(tokens []addedToken) *trie {
	if len(tokens) == 0 {
		return nil
	}
	root := &trie{}
	for i := range tokens {
		n := root
		for k := 0; k < len(tokens[i].content); k++ {
			c := tokens[i].content[k]
			if n.next == nil {
				n.next = map[byte]*trie{}
			}
			nx := n.next[c]
			if nx == nil {
				nx = &trie{}
				n.next[c] = nx
			}
			n = nx
		}
		if tokens[i].content != "" {
			n.token = &tokens[i]
		}
	}
	return root
}

// longestAt is the longest token starting at s[i:] (nil: none).
func (tr *trie) longestAt(s string, i int) (*addedToken, int) {
	var best *addedToken
	end := 0
	n := tr
	for j := i; j < len(s); j++ {
		if n = n.next[s[j]]; n == nil {
			break
		}
		if n.token != nil {
			best, end = n.token, j+1
		}
	}
	return best, end
}

// segments calls fn for the pieces of s (starting at offset in the
// original text) between added tokens (id -1) and for each token found,
// honouring lstrip, rstrip and single_word as the library does.
func (tr *trie) segments(s string, offset int, fn func(s string, offset int, id int32)) {
	if tr == nil {
		fn(s, offset, -1)
		return
	}
	last := 0
	for i := 0; i < len(s); {
		tok, end := tr.longestAt(s, i)
		if tok == nil {
			i++
			continue
		}
		start, stop := i, end
		if tok.sword && !((start == 0 || !endsWithWord(s[:start])) && (stop == len(s) || !startsWithWord(s[stop:]))) {
			i++
			continue
		}
		if tok.lstrip {
			start = max(len(strings.TrimRightFunc(s[:start], isWhitespace)), last)
		}
		if tok.rstrip {
			stop = len(s) - len(strings.TrimLeftFunc(s[stop:], isWhitespace))
		}
		if last < start {
			fn(s[last:start], offset+last, -1)
		}
		fn(s[start:stop], offset+start, tok.id)
		last, i = stop, stop
	}
	if last < len(s) || len(s) == 0 {
		fn(s[last:], offset+last, -1)
	}
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isWordChar(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isWordChar(r)
}

func isWordChar(r rune) bool {
	return r == '_' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r > 127 && !isWhitespace(r) && !isPunctuation(r)
}
