// Package chartvalues owns what the Helm chart's values give tfccm: Load
// turns a values file into the cloud config the chart would give the CCM
// (release tfccm in kube-system), for the commands that run where the chart
// does not (tfccm render --values, tfccm lbhost check --values). The chart
// writes that cloud config in its ConfigMap (templates/_helpers.tpl,
// tfccm.cloudConfig) and passes the typed baremetal values through as JSON,
// which package config turns into settings (config.BaremetalValues): the one
// conversion, which both paths share. deploy's TestChartValuesMatchChart
// fails when Load and the chart's ConfigMap disagree.
package chartvalues
