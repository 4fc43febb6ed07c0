// Command corl trains cohorts of language models with peer rewards. See
// "corl help" for the commands.
package main
