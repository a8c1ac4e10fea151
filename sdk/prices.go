package sdk

// WithPrices sets the Prices of each of models whose ID table lists,
// and returns models: a plugin keeps its price table (one per model id,
// with date and source) apart from its model table, where it changes on
// its own schedule.
func WithPrices(models []Model, table map[string][]Price) []Model {
	for i := range models {
		if ps, ok := table[models[i].ID]; ok {
			models[i].Prices = ps
		}
	}
	return models
}

// USDPer is a list price in US dollars: amount per per units of unit,
// from source as read on date.
func USDPer(unit string, amount float64, per int64, source, date string) Price {
	return Price{Unit: unit, Amount: amount, Per: per, Currency: "USD", Source: source, Date: date}
}

// Unpublished is the price of a model whose provider publishes no list
// price the plugin could confirm, in unit: zero, said so.
func Unpublished(unit, date string) []Price {
	return []Price{{Unit: unit, Currency: "USD", Source: PriceUnpublished, Date: date}}
}

// WithUnpublished gives every model of models that has no Prices the
// Unpublished price in unit, and returns models.
func WithUnpublished(models []Model, unit, date string) []Model {
	for i := range models {
		if len(models[i].Prices) == 0 {
			models[i].Prices = Unpublished(unit, date)
		}
	}
	return models
}
