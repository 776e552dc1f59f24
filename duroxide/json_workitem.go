package duroxide

// appendWorkItem appends the externally tagged wire form of w.
func appendWorkItem(b []byte, w WorkItem) ([]byte, error) {
	var err error
	switch x := w.(type) {
	case StartOrchestrationItem:
		b = append(b, `{"StartOrchestration":{`...)
		b = appendStrField(b, "instance", x.Instance)
		b = appendStrField(b, "orchestration", x.Orchestration)
		b = appendStrField(b, "input", x.Input)
		b = appendOptStrField(b, "version", x.Version)
		b = appendOptStrField(b, "parent_instance", x.ParentInstance)
		b = appendOptU64Field(b, "parent_id", x.ParentID)
		b = appendSkipU64Field(b, "parent_execution_id", x.ParentExecutionID)
		b = appendU64Field(b, "execution_id", x.ExecutionID)
		b = appendSkipU64Field(b, "execution_timeout_ms", x.ExecutionTimeoutMs)
		b = appendSkipU64Field(b, "instance_timeout_ms", x.InstanceTimeoutMs)
	case ActivityExecuteItem:
		b = append(b, `{"ActivityExecute":{`...)
		b = appendStrField(b, "instance", x.Instance)
		b = appendU64Field(b, "execution_id", x.ExecutionID)
		b = appendU64Field(b, "id", x.ID)
		b = appendStrField(b, "name", x.Name)
		b = appendStrField(b, "input", x.Input)
		b = appendSkipStrField(b, "session_id", x.SessionID)
		b = appendSkipStrField(b, "tag", x.Tag)
	case ActivityCompletedItem:
		b = append(b, `{"ActivityCompleted":{`...)
		b = appendStrField(b, "instance", x.Instance)
		b = appendU64Field(b, "execution_id", x.ExecutionID)
		b = appendU64Field(b, "id", x.ID)
		b = appendStrField(b, "result", x.Result)
	case ActivityFailedItem:
		b = append(b, `{"ActivityFailed":{`...)
		b = appendStrField(b, "instance", x.Instance)
		b = appendU64Field(b, "execution_id", x.ExecutionID)
		b = appendU64Field(b, "id", x.ID)
		b, err = appendDetailsField(b, x.Details)
	case TimerFiredItem:
		b = append(b, `{"TimerFired":{`...)
		b = appendStrField(b, "instance", x.Instance)
		b = appendU64Field(b, "execution_id", x.ExecutionID)
		b = appendU64Field(b, "id", x.ID)
		b = appendU64Field(b, "fire_at_ms", x.FireAtMs)
		b = appendSkipU64Field(b, "timeout_ms", x.TimeoutMs)
	case ExternalRaisedItem:
		b = append(b, `{"ExternalRaised":{`...)
		b = appendStrField(b, "instance", x.Instance)
		b = appendStrField(b, "name", x.Name)
		b = appendStrField(b, "data", x.Data)
	case SubOrchCompletedItem:
		b = append(b, `{"SubOrchCompleted":{`...)
		b = appendStrField(b, "parent_instance", x.ParentInstance)
		b = appendU64Field(b, "parent_execution_id", x.ParentExecutionID)
		b = appendU64Field(b, "parent_id", x.ParentID)
		b = appendStrField(b, "result", x.Result)
	case SubOrchFailedItem:
		b = append(b, `{"SubOrchFailed":{`...)
		b = appendStrField(b, "parent_instance", x.ParentInstance)
		b = appendU64Field(b, "parent_execution_id", x.ParentExecutionID)
		b = appendU64Field(b, "parent_id", x.ParentID)
		b, err = appendDetailsField(b, x.Details)
	case CancelInstanceItem:
		b = append(b, `{"CancelInstance":{`...)
		b = appendStrField(b, "instance", x.Instance)
		b = appendStrField(b, "reason", x.Reason)
		b = appendSkipU64Field(b, "execution_id", x.ExecutionID)
		b = appendSkipU64Field(b, "parent_execution_id", x.ParentExecutionID)
	case ContinueAsNewItem:
		b = append(b, `{"ContinueAsNew":{`...)
		b = appendStrField(b, "instance", x.Instance)
		b = appendStrField(b, "orchestration", x.Orchestration)
		b = appendStrField(b, "input", x.Input)
		b = appendOptStrField(b, "version", x.Version)
		b = appendSkipStrField(b, "parent_instance", x.ParentInstance)
		b = appendSkipU64Field(b, "parent_id", x.ParentID)
		b = appendSkipU64Field(b, "parent_execution_id", x.ParentExecutionID)
		b = appendCarry(appendKey(b, "carry_forward_events"), x.CarryForwardEvents)
		b = appendSkipStrField(b, "initial_custom_status", x.InitialCustomStatus)
		b = appendSkipU64Field(b, "restart_of", x.RestartOf)
	case QueueMessageItem:
		b = append(b, `{"QueueMessage":{`...)
		b = appendStrField(b, "instance", x.Instance)
		b = appendStrField(b, "name", x.Name)
		b = appendStrField(b, "data", x.Data)
	case RewindInstanceItem:
		b = append(b, `{"RewindInstance":{`...)
		b = appendStrField(b, "instance", x.Instance)
		b = appendU64Field(b, "execution_id", x.ExecutionID)
		b = appendStrField(b, "reason", x.Reason)
		b = appendSkipU64Field(b, "parent_execution_id", x.ParentExecutionID)
	case RedriveInstanceItem:
		b = append(b, `{"RedriveInstance":{`...)
		b = appendStrField(b, "instance", x.Instance)
		b = appendU64Field(b, "execution_id", x.ExecutionID)
		b = appendStrField(b, "reason", x.Reason)
	case SuspendInstanceItem:
		b = append(b, `{"SuspendInstance":{`...)
		b = appendStrField(b, "instance", x.Instance)
		b = appendStrField(b, "reason", x.Reason)
	case ResumeInstanceItem:
		b = append(b, `{"ResumeInstance":{`...)
		b = appendStrField(b, "instance", x.Instance)
		b = appendStrField(b, "reason", x.Reason)
	case nil:
		return nil, &EncodeError{Msg: "WorkItem is nil"}
	default:
		elem, _, isNil := deref(w)
		if isNil {
			return nil, &EncodeError{Msg: "WorkItem is a nil " + typeName(w)}
		}
		if wi, ok := elem.(WorkItem); ok {
			return appendWorkItem(b, wi)
		}
		return nil, &EncodeError{Msg: "unsupported WorkItem " + typeName(w)}
	}
	if err != nil {
		return nil, prefixEncode(err, w.Variant())
	}
	return append(b, '}', '}'), nil
}

// Field order of the WorkItem variants and their #[serde(default)] fields,
// for serde's sequence form.
var workItemLayouts = map[string]*layout{
	"StartOrchestration": {
		name:     "struct variant WorkItem::StartOrchestration",
		order:    []field{fInstance, fOrchestration, fInput, fVersion, fParentInstance, fParentID, fParentExecutionID, fExecutionID},
		defaults: bits(fParentExecutionID),
	},
	"ActivityExecute": {
		name:     "struct variant WorkItem::ActivityExecute",
		order:    []field{fInstance, fExecutionID, fID, fName, fInput, fSessionID, fTag},
		defaults: bits(fSessionID, fTag),
	},
	"ActivityCompleted": {name: "struct variant WorkItem::ActivityCompleted", order: []field{fInstance, fExecutionID, fID, fResult}},
	"ActivityFailed":    {name: "struct variant WorkItem::ActivityFailed", order: []field{fInstance, fExecutionID, fID, fDetails}},
	"TimerFired":        {name: "struct variant WorkItem::TimerFired", order: []field{fInstance, fExecutionID, fID, fFireAtMs}},
	"ExternalRaised":    {name: "struct variant WorkItem::ExternalRaised", order: []field{fInstance, fName, fData}},
	"SubOrchCompleted":  {name: "struct variant WorkItem::SubOrchCompleted", order: []field{fParentInstance, fParentExecutionID, fParentID, fResult}},
	"SubOrchFailed":     {name: "struct variant WorkItem::SubOrchFailed", order: []field{fParentInstance, fParentExecutionID, fParentID, fDetails}},
	// CancelInstance's execution_id and parent_execution_id,
	// StartOrchestration's execution_timeout_ms and instance_timeout_ms,
	// TimerFired's timeout_ms and ContinueAsNew's restart_of are
	// Go-only and decoded from the map form only (the one Go writes): the
	// sequence layouts stay serde's, which has no such elements.
	"CancelInstance": {name: "struct variant WorkItem::CancelInstance", order: []field{fInstance, fReason}},
	"ContinueAsNew": {
		name:     "struct variant WorkItem::ContinueAsNew",
		order:    []field{fInstance, fOrchestration, fInput, fVersion, fParentInstance, fParentID, fParentExecutionID, fCarryForwardEvents, fInitialCustomStatus},
		defaults: bits(fParentInstance, fParentID, fParentExecutionID, fCarryForwardEvents, fInitialCustomStatus),
	},
	"QueueMessage": {name: "struct variant WorkItem::QueueMessage", order: []field{fInstance, fName, fData}},
	// Go-only variants (docs/compatibility.md).
	"RewindInstance": {
		name:     "struct variant WorkItem::RewindInstance",
		order:    []field{fInstance, fExecutionID, fReason, fParentExecutionID},
		defaults: bits(fParentExecutionID),
	},
	"RedriveInstance": {name: "struct variant WorkItem::RedriveInstance", order: []field{fInstance, fExecutionID, fReason}},
	"SuspendInstance": {name: "struct variant WorkItem::SuspendInstance", order: []field{fInstance, fReason}},
	"ResumeInstance":  {name: "struct variant WorkItem::ResumeInstance", order: []field{fInstance, fReason}},
}

// workItem decodes an externally tagged WorkItem at the current position.
func (d *decoder) workItem() (WorkItem, error) {
	const enum = "WorkItem"
	pos := d.PeekPos()
	name, unit, err := d.EnumStart(enum)
	if err != nil {
		return nil, err
	}
	l := workItemLayouts[name]
	if l == nil {
		return nil, &UnknownVariantError{Enum: enum, Variant: name}
	}
	if unit {
		return nil, d.Errorf(pos, "invalid type: unit variant, expected %s", l.name)
	}
	var f fields
	if err := d.collectStruct(&f, l); err != nil {
		return nil, prefixField(err, name)
	}
	end := d.Pos()
	var w WorkItem
	switch name {
	case "StartOrchestration":
		w = StartOrchestrationItem{
			Instance:           f.str(fInstance),
			Orchestration:      f.str(fOrchestration),
			Input:              f.str(fInput),
			Version:            f.optStr(fVersion),
			ParentInstance:     f.optStr(fParentInstance),
			ParentID:           f.optU64(fParentID),
			ParentExecutionID:  f.optU64(fParentExecutionID),
			ExecutionID:        f.u64(fExecutionID),
			ExecutionTimeoutMs: f.optU64(fExecutionTimeoutMs),
			InstanceTimeoutMs:  f.optU64(fInstanceTimeoutMs),
		}
	case "ActivityExecute":
		w = ActivityExecuteItem{
			Instance:    f.str(fInstance),
			ExecutionID: f.u64(fExecutionID),
			ID:          f.u64(fID),
			Name:        f.str(fName),
			Input:       f.str(fInput),
			SessionID:   f.optStr(fSessionID),
			Tag:         f.optStr(fTag),
		}
	case "ActivityCompleted":
		w = ActivityCompletedItem{
			Instance:    f.str(fInstance),
			ExecutionID: f.u64(fExecutionID),
			ID:          f.u64(fID),
			Result:      f.str(fResult),
		}
	case "ActivityFailed":
		w = ActivityFailedItem{
			Instance:    f.str(fInstance),
			ExecutionID: f.u64(fExecutionID),
			ID:          f.u64(fID),
			Details:     f.details(fDetails),
		}
	case "TimerFired":
		w = TimerFiredItem{
			Instance:    f.str(fInstance),
			ExecutionID: f.u64(fExecutionID),
			ID:          f.u64(fID),
			FireAtMs:    f.u64(fFireAtMs),
			TimeoutMs:   f.optU64(fTimeoutMs),
		}
	case "ExternalRaised":
		w = ExternalRaisedItem{Instance: f.str(fInstance), Name: f.str(fName), Data: f.str(fData)}
	case "SubOrchCompleted":
		w = SubOrchCompletedItem{
			ParentInstance:    f.str(fParentInstance),
			ParentExecutionID: f.u64(fParentExecutionID),
			ParentID:          f.u64(fParentID),
			Result:            f.str(fResult),
		}
	case "SubOrchFailed":
		w = SubOrchFailedItem{
			ParentInstance:    f.str(fParentInstance),
			ParentExecutionID: f.u64(fParentExecutionID),
			ParentID:          f.u64(fParentID),
			Details:           f.details(fDetails),
		}
	case "CancelInstance":
		w = CancelInstanceItem{Instance: f.str(fInstance), Reason: f.str(fReason), ExecutionID: f.optU64(fExecutionID),
			ParentExecutionID: f.optU64(fParentExecutionID)}
	case "ContinueAsNew":
		w = ContinueAsNewItem{
			Instance:            f.str(fInstance),
			Orchestration:       f.str(fOrchestration),
			Input:               f.str(fInput),
			Version:             f.optStr(fVersion),
			ParentInstance:      f.optStr(fParentInstance),
			ParentID:            f.optU64(fParentID),
			ParentExecutionID:   f.optU64(fParentExecutionID),
			CarryForwardEvents:  f.carry(fCarryForwardEvents, false),
			InitialCustomStatus: f.optStr(fInitialCustomStatus),
			RestartOf:           f.optU64(fRestartOf),
		}
	case "QueueMessage":
		w = QueueMessageItem{Instance: f.str(fInstance), Name: f.str(fName), Data: f.str(fData)}
	case "RewindInstance":
		w = RewindInstanceItem{Instance: f.str(fInstance), ExecutionID: f.u64(fExecutionID), Reason: f.str(fReason),
			ParentExecutionID: f.optU64(fParentExecutionID)}
	case "RedriveInstance":
		w = RedriveInstanceItem{Instance: f.str(fInstance), ExecutionID: f.u64(fExecutionID), Reason: f.str(fReason)}
	case "SuspendInstance":
		w = SuspendInstanceItem{Instance: f.str(fInstance), Reason: f.str(fReason)}
	case "ResumeInstance":
		w = ResumeInstanceItem{Instance: f.str(fInstance), Reason: f.str(fReason)}
	}
	if f.err != nil {
		return nil, prefixField(f.err, name)
	}
	d.SetPos(end)
	if err := d.EnumEnd(enum); err != nil {
		return nil, err
	}
	return w, nil
}

// MarshalJSON encodes the item as {"StartOrchestration":{...}}.
func (w StartOrchestrationItem) MarshalJSON() ([]byte, error) { return MarshalWorkItem(w) }

// MarshalJSON encodes the item as {"ActivityExecute":{...}}.
func (w ActivityExecuteItem) MarshalJSON() ([]byte, error) { return MarshalWorkItem(w) }

// MarshalJSON encodes the item as {"ActivityCompleted":{...}}.
func (w ActivityCompletedItem) MarshalJSON() ([]byte, error) { return MarshalWorkItem(w) }

// MarshalJSON encodes the item as {"ActivityFailed":{...}}.
func (w ActivityFailedItem) MarshalJSON() ([]byte, error) { return MarshalWorkItem(w) }

// MarshalJSON encodes the item as {"TimerFired":{...}}.
func (w TimerFiredItem) MarshalJSON() ([]byte, error) { return MarshalWorkItem(w) }

// MarshalJSON encodes the item as {"ExternalRaised":{...}}.
func (w ExternalRaisedItem) MarshalJSON() ([]byte, error) { return MarshalWorkItem(w) }

// MarshalJSON encodes the item as {"SubOrchCompleted":{...}}.
func (w SubOrchCompletedItem) MarshalJSON() ([]byte, error) { return MarshalWorkItem(w) }

// MarshalJSON encodes the item as {"SubOrchFailed":{...}}.
func (w SubOrchFailedItem) MarshalJSON() ([]byte, error) { return MarshalWorkItem(w) }

// MarshalJSON encodes the item as {"CancelInstance":{...}}.
func (w CancelInstanceItem) MarshalJSON() ([]byte, error) { return MarshalWorkItem(w) }

// MarshalJSON encodes the item as {"ContinueAsNew":{...}}.
func (w ContinueAsNewItem) MarshalJSON() ([]byte, error) { return MarshalWorkItem(w) }

// MarshalJSON encodes the item as {"QueueMessage":{...}}.
func (w QueueMessageItem) MarshalJSON() ([]byte, error) { return MarshalWorkItem(w) }

// MarshalJSON encodes the item as {"RewindInstance":{...}}.
func (w RewindInstanceItem) MarshalJSON() ([]byte, error) { return MarshalWorkItem(w) }

// MarshalJSON encodes the item as {"RedriveInstance":{...}}.
func (w RedriveInstanceItem) MarshalJSON() ([]byte, error) { return MarshalWorkItem(w) }

// MarshalJSON encodes the item as {"SuspendInstance":{...}}.
func (w SuspendInstanceItem) MarshalJSON() ([]byte, error) { return MarshalWorkItem(w) }

// MarshalJSON encodes the item as {"ResumeInstance":{...}}.
func (w ResumeInstanceItem) MarshalJSON() ([]byte, error) { return MarshalWorkItem(w) }

// UnmarshalJSON decodes {"SuspendInstance":{...}}; other variants are an
// error.
func (w *SuspendInstanceItem) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("WorkItem", data, UnmarshalWorkItem, w)
}

// UnmarshalJSON decodes {"ResumeInstance":{...}}; other variants are an
// error.
func (w *ResumeInstanceItem) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("WorkItem", data, UnmarshalWorkItem, w)
}

// UnmarshalJSON decodes {"RewindInstance":{...}}; other variants are an
// error.
func (w *RewindInstanceItem) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("WorkItem", data, UnmarshalWorkItem, w)
}

// UnmarshalJSON decodes {"RedriveInstance":{...}}; other variants are an
// error.
func (w *RedriveInstanceItem) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("WorkItem", data, UnmarshalWorkItem, w)
}

// UnmarshalJSON decodes {"StartOrchestration":{...}}; other variants are
// an error.
func (w *StartOrchestrationItem) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("WorkItem", data, UnmarshalWorkItem, w)
}

// UnmarshalJSON decodes {"ActivityExecute":{...}}; other variants are an
// error.
func (w *ActivityExecuteItem) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("WorkItem", data, UnmarshalWorkItem, w)
}

// UnmarshalJSON decodes {"ActivityCompleted":{...}}; other variants are an
// error.
func (w *ActivityCompletedItem) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("WorkItem", data, UnmarshalWorkItem, w)
}

// UnmarshalJSON decodes {"ActivityFailed":{...}}; other variants are an
// error.
func (w *ActivityFailedItem) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("WorkItem", data, UnmarshalWorkItem, w)
}

// UnmarshalJSON decodes {"TimerFired":{...}}; other variants are an error.
func (w *TimerFiredItem) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("WorkItem", data, UnmarshalWorkItem, w)
}

// UnmarshalJSON decodes {"ExternalRaised":{...}}; other variants are an
// error.
func (w *ExternalRaisedItem) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("WorkItem", data, UnmarshalWorkItem, w)
}

// UnmarshalJSON decodes {"SubOrchCompleted":{...}}; other variants are an
// error.
func (w *SubOrchCompletedItem) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("WorkItem", data, UnmarshalWorkItem, w)
}

// UnmarshalJSON decodes {"SubOrchFailed":{...}}; other variants are an
// error.
func (w *SubOrchFailedItem) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("WorkItem", data, UnmarshalWorkItem, w)
}

// UnmarshalJSON decodes {"CancelInstance":{...}}; other variants are an
// error.
func (w *CancelInstanceItem) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("WorkItem", data, UnmarshalWorkItem, w)
}

// UnmarshalJSON decodes {"ContinueAsNew":{...}}; other variants are an
// error.
func (w *ContinueAsNewItem) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("WorkItem", data, UnmarshalWorkItem, w)
}

// UnmarshalJSON decodes {"QueueMessage":{...}}; other variants are an
// error.
func (w *QueueMessageItem) UnmarshalJSON(data []byte) error {
	return unmarshalVariant("WorkItem", data, UnmarshalWorkItem, w)
}
