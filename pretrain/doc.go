// Package pretrain trains small base models on the labeled pretraining split
// of built-in tasks (supervised next-token loss on worked solutions) until
// they reach a chosen partial competence: the "base models" that label-free RL
// then improves.
package pretrain
