package main

import (
	"github.com/spf13/cobra"

	"stampede/scenarios"
)

func newValidateCmd() *cobra.Command {
	var (
		sets      scenarioSets
		reference bool
	)
	c := &cobra.Command{
		Use:   "validate SCENARIO | --reference",
		Short: "Check a scenario file and print it with every default filled in",
		Long: `validate reads a scenario file, applies any --set overrides, checks every field
and prints the scenario as it would run, with every default filled in. A bad file
gets a message naming the file, line, column and field, and exit status 2.`,
		Example: `  stampede validate scenarios/stock-balance.yaml
  stampede validate scenarios/stock-balance.yaml --set proxy.limit_conn.per_key=off
  stampede validate --reference`,
		Args: func(c *cobra.Command, args []string) error {
			if reference {
				return cobra.NoArgs(c, args)
			}
			return cobra.ExactArgs(1)(c, args)
		},
		RunE: func(c *cobra.Command, args []string) error {
			if reference {
				return scenarios.WriteReference(c.OutOrStdout())
			}
			sc, err := sets.load(args[0])
			if err != nil {
				return err
			}
			return sc.Format(c.OutOrStdout())
		},
	}
	sets.register(c, "tenants.user-x.load.users=6")
	c.Flags().BoolVar(&reference, "reference", false, "print every key of the scenario format with its type, default and an example")
	registerCompletion(c)
	return c
}
