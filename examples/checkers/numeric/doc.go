// Command numeric is a corl answer checker in Go for numeric answers
// within a relative tolerance (see the checker package doc): the answer
// key is the response's last number, rounded to 6 significant digits, so
// "0.3333333" and "1/3 = 0.333333" vote together; "correct" compares it
// with the row's label within 1e-6.
//
//	go build -o numeric ./examples/checkers/numeric
//	checker: {command: [/abs/path/numeric]}
package main
